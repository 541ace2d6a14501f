// Model-level parity: tiny gpt2, llama (GQA) and qwen2 (biases, vocab 50257) built on the CPU, weights
// copied to the device; logits, loss and every parameter gradient compared (1e-4 of the largest value,
// fp32); KV-cache decoding on the device equals the full forward on the device; the PyTorch reference
// fixtures hold on the device; tf32 and bf16 stay close to fp32.
#include <cstring>

#include "model/checkpoint.h"
#include "runtime/io/safetensors.h"
#include "tests/cuda/cuda_test.h"
#include "tests/cuda/model_helpers.h"

using namespace gtpo;
using namespace gtpo::testing;
using model::Architecture;

namespace {

constexpr Architecture kArchs[] = {Architecture::gpt2, Architecture::llama, Architecture::qwen2};

struct Outputs {
  std::vector<float> logits;
  float loss = 0.0f;
  std::vector<std::vector<float>> grads;  // in parameter order
};

// Logits of a [3, 17] batch; loss = next-token cross-entropy (a few targets ignored) plus a log-prob and
// entropy term at temperature 0.8, so both fused losses' backward passes reach every parameter.
Outputs run_model(model::Transformer& m, const std::vector<int32_t>& tokens, int64_t B, int64_t T) {
  const Device d = m.device();
  const int64_t V = m.config().vocab_size;
  m.parameters().zero_grad();
  Tensor logits = m.forward(Tensor::from_ints(tokens, {B, T}, d));
  std::vector<int32_t> targets(static_cast<size_t>(B * (T - 1)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t + 1 < T; ++t)
      targets[static_cast<size_t>(b * (T - 1) + t)] = (t % 5 == 4) ? -100 : tokens[static_cast<size_t>(b * T + t + 1)];
  Tensor shifted = ops::reshape(ops::slice(logits, 1, 0, T - 1), {B * (T - 1), V});
  Tensor ce = ops::cross_entropy(shifted, Tensor::from_ints(targets, {B * (T - 1)}, d));
  std::vector<int32_t> chosen(static_cast<size_t>(B * (T - 1)));
  for (size_t i = 0; i < chosen.size(); ++i) chosen[i] = static_cast<int32_t>((i * 7 + 3) % static_cast<size_t>(V));
  ops::LogprobEntropy lh = ops::token_logprob_entropy(shifted, Tensor::from_ints(chosen, {B * (T - 1)}, d), 0.8f);
  Tensor loss = ops::add(ce, ops::add(ops::mul_scalar(ops::mean_all(lh.logprob), -0.5f),
                                      ops::mul_scalar(ops::mean_all(lh.entropy), 0.1f)));
  loss.backward();
  Outputs out;
  out.logits = logits.to_vector();
  out.loss = loss.item();
  for (const optim::Parameter& p : m.parameters()) {
    REQUIRE(p.tensor.grad().defined());
    out.grads.push_back(p.tensor.grad().to_vector());
  }
  return out;
}

std::vector<int32_t> tokens_for(const model::ModelConfig& c, int64_t n, uint64_t seed) {
  TestRng rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = rng.integer(0, static_cast<int32_t>(c.vocab_size));
  return v;
}

}  // namespace

TEST_CASE("model: logits, loss and every parameter gradient match the CPU (1e-4)", "[cuda][model]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "model parity");
  for (Architecture arch : kArchs) {
    INFO(arch_label(arch));
    auto cpu = cuda_tiny_model(arch, 3);
    auto on_dev = copy_model_to(*cpu, dev);
    const int64_t B = 3, T = 17;
    const std::vector<int32_t> tokens = tokens_for(cpu->config(), B * T, 11);
    const Outputs ref = run_model(*cpu, tokens, B, T), got = run_model(*on_dev, tokens, B, T);
    check_close(std::string(arch_label(arch)) + " logits", ref.logits, got.logits, Tol{0.0, 1e-4});
    INFO("loss: cpu " << ref.loss << ", device " << got.loss);
    CHECK(std::abs(ref.loss - got.loss) <= 1e-5 * std::abs(ref.loss) + 1e-6);
    size_t i = 0;
    for (const optim::Parameter& p : cpu->parameters()) {
      check_close("gradient of " + p.name, ref.grads[i], got.grads[i], Tol{0.0, 1e-4});
      ++i;
    }
  }
}

TEST_CASE("model: a left-padded, masked batch with explicit positions matches the CPU", "[cuda][model]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "masked forward parity");
  for (Architecture arch : kArchs) {
    INFO(arch_label(arch));
    auto cpu = cuda_tiny_model(arch, 5);
    auto on_dev = copy_model_to(*cpu, dev);
    const int64_t B = 2, T = 9;
    const std::vector<int32_t> tokens = tokens_for(cpu->config(), B * T, 13);
    // Row 0 has 4 pads on the left: mask 0 there, positions counted from its first real token.
    std::vector<int32_t> mask(static_cast<size_t>(B * T), 1), pos(static_cast<size_t>(B * T));
    for (int64_t t = 0; t < T; ++t) {
      mask[static_cast<size_t>(t)] = t < 4 ? 0 : 1;
      pos[static_cast<size_t>(t)] = static_cast<int32_t>(std::max<int64_t>(0, t - 4));
      pos[static_cast<size_t>(T + t)] = static_cast<int32_t>(t);
    }
    NoGradGuard no_grad;
    auto run = [&](const model::Transformer& m) {
      const Device d = m.device();
      return m.forward(Tensor::from_ints(tokens, {B, T}, d), Tensor::from_ints(pos, {B, T}, d),
                       Tensor::from_ints(mask, {B, T}, d))
          .to_vector();
    };
    check_close(std::string(arch_label(arch)) + " masked logits", run(*cpu), run(*on_dev), Tol{0.0, 1e-4});
  }
}

TEST_CASE("model: KV-cache decoding on the device equals the full forward on the device", "[cuda][model][kv]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "KV-cache decode");
  for (Architecture arch : kArchs) {
    INFO(arch_label(arch));
    auto cpu = cuda_tiny_model(arch, 7);
    auto m = copy_model_to(*cpu, dev);
    const int64_t B = 2, P = 6, N = 10, T = P + N, V = m->config().vocab_size;
    const std::vector<int32_t> tokens = tokens_for(m->config(), B * T, 17);
    NoGradGuard no_grad;
    const std::vector<float> full = m->forward(Tensor::from_ints(tokens, {B, T}, dev)).to_vector();  // [B, T, V]

    model::KvCache cache = model::KvCache::allocate(m->config(), B, T, dev);
    std::vector<float> cached(static_cast<size_t>(B * T * V), NAN);
    auto take = [&](const std::vector<int32_t>& chunk, int64_t start, int64_t len) {
      std::vector<int32_t> pos(static_cast<size_t>(B * len));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < len; ++t) pos[static_cast<size_t>(b * len + t)] = static_cast<int32_t>(start + t);
      std::vector<int32_t> mask(static_cast<size_t>(B * (start + len)), 1);
      const std::vector<float> out =
          m->forward_cached(Tensor::from_ints(chunk, {B, len}, dev), Tensor::from_ints(pos, {B, len}, dev),
                            Tensor::from_ints(mask, {B, start + len}, dev), cache, false)
              .to_vector();
      for (int64_t b = 0; b < B; ++b)
        std::copy(out.begin() + b * len * V, out.begin() + (b + 1) * len * V, cached.begin() + (b * T + start) * V);
    };
    std::vector<int32_t> prompt;
    for (int64_t b = 0; b < B; ++b)
      prompt.insert(prompt.end(), tokens.begin() + b * T, tokens.begin() + b * T + P);
    take(prompt, 0, P);  // prefill
    for (int64_t t = P; t < T; ++t) {
      std::vector<int32_t> step;
      for (int64_t b = 0; b < B; ++b) step.push_back(tokens[static_cast<size_t>(b * T + t)]);
      take(step, t, 1);  // one decode step
    }
    check_close(std::string(arch_label(arch)) + " cached vs full logits", full, cached, Tol{0.0, 1e-4});
  }
}

TEST_CASE("model: the PyTorch reference fixtures hold on the device (1e-4)", "[cuda][model][reference]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "reference fixtures");
  for (const char* name : {"gpt2_tiny", "llama_gqa", "qwen2_bias"}) {
    INFO(name);
    const std::string dir = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/" + name;
    model::LoadedModel loaded = model::load_model(dir, dev);
    model::Transformer& m = *loaded.model;
    REQUIRE(m.device() == dev);
    io::SafetensorsFile expected = io::SafetensorsFile::load(dir + "/expected.safetensors");
    const io::SafetensorsEntry& tok = expected.at("tokens");
    std::vector<int32_t> tokens(tok.bytes.size() / 4);
    std::memcpy(tokens.data(), tok.bytes.data(), tok.bytes.size());
    const int64_t B = tok.shape[0], T = tok.shape[1], V = m.config().vocab_size;
    Tensor logits = m.forward(Tensor::from_ints(tokens, {B, T}, dev));
    check_close(std::string(name) + " logits", expected.read_f32("logits"), logits.to_vector(), Tol{0.0, 1e-4});
    std::vector<int32_t> targets(static_cast<size_t>(B * (T - 1)));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t + 1 < T; ++t)
        targets[static_cast<size_t>(b * (T - 1) + t)] = tokens[static_cast<size_t>(b * T + t + 1)];
    Tensor loss = ops::cross_entropy(ops::reshape(ops::slice(logits, 1, 0, T - 1), {B * (T - 1), V}),
                                     Tensor::from_ints(targets, {B * (T - 1)}, dev));
    CHECK(loss.item() == Approx(expected.read_f32("loss")[0]).epsilon(1e-5));
    loss.backward();
    for (const optim::Parameter& p : m.parameters())
      check_close(std::string(name) + " gradient of " + p.name, expected.read_f32("grad." + p.name),
                  p.tensor.grad().to_vector(), Tol{0.0, 1e-4});
  }
}

TEST_CASE("model: tf32 and bf16 forwards stay close to the fp32 CPU forward", "[cuda][model][precision]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "tf32/bf16 model forward");
  if (is_stand_in(dev)) {
    WARN("GTPO_CUDA_TESTS_ON_CPU: tf32/bf16 are GPU-only; checking that the CPU refuses them instead");
    CHECK_THROWS_WITH(OptionsGuard(dev, {MatmulPrecision::bf16, true}), Catch::Contains("needs device: cuda"));
    return;
  }
  for (Architecture arch : kArchs) {
    INFO(arch_label(arch));
    auto cpu = cuda_tiny_model(arch, 9);
    auto on_dev = copy_model_to(*cpu, dev);
    const int64_t B = 2, T = 16;
    const std::vector<int32_t> tokens = tokens_for(cpu->config(), B * T, 19);
    NoGradGuard no_grad;
    const std::vector<float> ref = cpu->forward(Tensor::from_ints(tokens, {B, T})).to_vector();
    // A 2-layer model compounds a few roundings per GEMM: allowances of a few times tf32's 2^-10 and
    // bf16's 2^-7, relative to the largest logit.
    for (auto [p, tol] : {std::pair{MatmulPrecision::tf32, 1e-2}, std::pair{MatmulPrecision::bf16, 6e-2}}) {
      OptionsGuard guard(dev, {p, true});
      const std::vector<float> got = on_dev->forward(Tensor::from_ints(tokens, {B, T}, dev)).to_vector();
      check_close(std::string(arch_label(arch)) + " logits " + matmul_precision_name(p), ref, got, Tol{0.0, tol});
    }
  }
}
