// GPU determinism and the sampler on the GPU: the same training loop twice on the device gives bitwise
// identical weights (fp32, and tf32 on a GPU); `gtpo train` twice with train.device gives the same metrics
// and checkpoint bit for bit; the sampler gives the same tokens for the same seed, its log-probs agree with
// a CPU scoring forward, and greedy decoding picks the CPU's tokens.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "model/checkpoint.h"
#include "model/sampler.h"
#include "runtime/io/atomic_file.h"
#include "runtime/optim/adamw.h"
#include "runtime/optim/grad_clip.h"
#include "tests/cuda/cuda_test.h"
#include "tests/cuda/model_helpers.h"
#include "tests/support/commands.h"

using namespace gtpo;
using namespace gtpo::testing;
using model::Architecture;
namespace fs = std::filesystem;

namespace {

struct LoopResult {
  std::vector<float> losses;
  std::vector<std::vector<float>> weights;
};

// Six AdamW steps (clipped gradients, weight decay) of cross-entropy plus an entropy bonus, on a batch that
// changes every step.
LoopResult train_loop(Architecture arch, Device d) {
  auto cpu = cuda_tiny_model(arch, 21);
  auto m = copy_model_to(*cpu, d);
  optim::AdamWOptions adam;
  adam.lr = 3e-3f;
  adam.weight_decay = 0.1f;
  optim::AdamW opt(m->parameters(), adam);
  const int64_t B = 4, T = 24, V = m->config().vocab_size;
  LoopResult r;
  for (int step = 0; step < 6; ++step) {
    TestRng rng(100 + static_cast<uint64_t>(step));
    std::vector<int32_t> tokens(static_cast<size_t>(B * T)), targets(static_cast<size_t>(B * T));
    for (int32_t& t : tokens) t = rng.integer(0, static_cast<int32_t>(V));
    for (size_t i = 0; i < targets.size(); ++i) targets[i] = (i % 7 == 0) ? -100 : tokens[(i + 1) % tokens.size()];
    m->parameters().zero_grad();
    Tensor logits = ops::reshape(m->forward(Tensor::from_ints(tokens, {B, T}, d)), {B * T, V});
    Tensor ce = ops::cross_entropy(logits, Tensor::from_ints(targets, {B * T}, d));
    ops::LogprobEntropy lh = ops::token_logprob_entropy(logits, Tensor::from_ints(tokens, {B * T}, d), 1.0f);
    Tensor loss = ops::add(ce, ops::mul_scalar(ops::mean_all(lh.entropy), -0.01f));
    loss.backward();
    optim::clip_grad_norm(m->parameters(), 0.5f);
    opt.step();
    r.losses.push_back(loss.item());
  }
  for (const optim::Parameter& p : m->parameters()) r.weights.push_back(p.tensor.to_vector());
  return r;
}

void check_same_run(const LoopResult& a, const LoopResult& b, const std::string& what) {
  check_bitwise(what + " losses", a.losses, b.losses);
  REQUIRE(a.weights.size() == b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) check_bitwise(what + " weights " + std::to_string(i), a.weights[i], b.weights[i]);
}

const char* kTrainConfig = R"(model:
  architecture: llama
  hidden_size: 32
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 64
task:
  name: arith
  difficulty: 1
sampler:
  group_size: 4
  max_new_tokens: 12
rl:
  algo: gtpo
  dynamic_sampling: false
sft:
  steps: 2
  batch_size: 8
train:
  steps: 3
  prompts_per_step: 3
  checkpoint_every: 0
  sample_every: 1
eval:
  every: 0
  num_problems: 4
  k: 2
log:
  progress: false
)";

// metrics.jsonl without the wall-clock fields.
std::vector<std::string> deterministic_metrics(const std::string& run) {
  std::istringstream in(io::read_file(run + "/metrics.jsonl"));
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (auto it = j.begin(); it != j.end();) {
      if (it.key().rfind("seconds", 0) == 0 || it.key().find("per_s") != std::string::npos)
        it = j.erase(it);
      else
        ++it;
    }
    out.push_back(j.dump());
  }
  return out;
}

std::vector<model::PromptInput> prompts_for(const model::ModelConfig& c) {
  std::vector<model::PromptInput> prompts;
  for (uint64_t p = 0; p < 5; ++p) {
    TestRng rng(300 + p);
    model::PromptInput in;
    in.prompt_id = 40 + p;
    for (uint64_t t = 0; t < 2 + 3 * p; ++t) in.tokens.push_back(rng.integer(0, static_cast<int32_t>(c.vocab_size)));
    prompts.push_back(in);
  }
  return prompts;
}

}  // namespace

TEST_CASE("determinism: the same training loop twice gives bitwise identical weights",
          "[cuda][determinism]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "GPU determinism (training loop)");
  for (Architecture arch : {Architecture::gpt2, Architecture::llama, Architecture::qwen2}) {
    const std::string label = std::string(arch_label(arch)) + " fp32";
    check_same_run(train_loop(arch, dev), train_loop(arch, dev), label);
  }
  if (!is_stand_in(dev)) {
    // Deterministic mode pins cuBLAS in tf32 too.
    OptionsGuard guard(dev, {MatmulPrecision::tf32, true});
    check_same_run(train_loop(Architecture::llama, dev), train_loop(Architecture::llama, dev), "llama tf32");
  }
}

TEST_CASE("determinism: gtpo train twice on the device gives the same metrics and checkpoint",
          "[cuda][determinism][train]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "GPU determinism (gtpo train)");
  const std::string dir = fresh_temp_dir("cuda_train_twice");
  io::write_file_atomic(dir + "/run.yaml", kTrainConfig);
  const std::string device = std::string("train.device=") + device_name(dev);
  for (const char* run : {"a", "b"})
    REQUIRE(call_command({"train", dir + "/run.yaml", device, "train.out_dir=" + dir + "/" + run}, apps::run_train) == 0);
  const std::vector<std::string> a = deterministic_metrics(dir + "/a"), b = deterministic_metrics(dir + "/b");
  REQUIRE(a.size() == 3);
  CHECK(a == b);
  CHECK(io::read_file(dir + "/a/samples.jsonl") == io::read_file(dir + "/b/samples.jsonl"));
  const std::string ckpt = "/checkpoints/step-000003/model.safetensors";
  CHECK(io::read_file(dir + "/a" + ckpt) == io::read_file(dir + "/b" + ckpt));
  CHECK(io::read_file(dir + "/a/config.yaml").find(device_name(dev)) != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sampler: the same seed gives the same samples, and log-probs match a CPU scoring forward",
          "[cuda][sampler]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "sampler on the device");
  for (Architecture arch : {Architecture::gpt2, Architecture::llama, Architecture::qwen2}) {
    INFO(arch_label(arch));
    auto cpu = cuda_tiny_model(arch, 31, /*sharpen=*/8.0f);
    auto m = copy_model_to(*cpu, dev);
    const std::vector<model::PromptInput> prompts = prompts_for(m->config());
    struct Setting {
      const char* name;
      float temperature;
      int64_t top_k;
      float top_p;
    };
    for (const Setting& s : {Setting{"t=1", 1.0f, 0, 1.0f}, Setting{"t=0.7 top-k 5 top-p 0.9", 0.7f, 5, 0.9f},
                             Setting{"greedy", 0.0f, 0, 1.0f}}) {
      INFO(s.name);
      model::SamplingOptions o;
      o.group_size = 3;
      o.temperature = s.temperature;
      o.top_k = s.top_k;
      o.top_p = s.top_p;
      o.max_new_tokens = 14;
      o.seed = 1234;
      o.eos_id = 2;
      const std::vector<model::Sample> a = model::sample_groups(*m, prompts, o);
      const std::vector<model::Sample> b = model::sample_groups(*m, prompts, o);
      o.choose_on_device = true;  // the choice kernel instead of the host's: the same samples, bit for bit
      const std::vector<model::Sample> on_device = model::sample_groups(*m, prompts, o);
      o.choose_on_device = false;
      // Finished rows fed a pad instead of leaving the batch (which they do where the backend reads cache
      // rows by index: the CPU, and CUDA with GTPO_CUDA_KV_ROWS=1): the same samples, bit for bit.
      o.drop_finished_rows = false;
      const std::vector<model::Sample> padded = model::sample_groups(*m, prompts, o);
      o.drop_finished_rows = true;
      REQUIRE(padded.size() == a.size());
      REQUIRE(a.size() == prompts.size() * 3);
      REQUIRE(b.size() == a.size());
      REQUIRE(on_device.size() == a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        INFO("sample " << i);
        CHECK(a[i].tokens == b[i].tokens);
        check_bitwise("log-probs", a[i].logprobs, b[i].logprobs);
        check_bitwise("entropies", a[i].entropies, b[i].entropies);
        CHECK(a[i].tokens == on_device[i].tokens);
        CHECK(a[i].tokens == padded[i].tokens);
        check_bitwise("log-probs, finished rows padded", a[i].logprobs, padded[i].logprobs);
        check_bitwise("log-probs, choice on the device", a[i].logprobs, on_device[i].logprobs);
        // The device's log-probs and entropies against the CPU's scoring forward of the same tokens.
        std::vector<int32_t> seq = a[i].prompt_tokens;
        seq.insert(seq.end(), a[i].tokens.begin(), a[i].tokens.end());
        const int64_t T = static_cast<int64_t>(seq.size()), k = static_cast<int64_t>(a[i].prompt_tokens.size());
        const int64_t V = cpu->config().vocab_size;
        NoGradGuard no_grad;
        Tensor rows = ops::reshape(ops::slice(cpu->forward(Tensor::from_ints(seq, {1, T})), 1, k - 1, T - 1), {T - k, V});
        std::vector<int32_t> targets(seq.begin() + k, seq.end());
        const float report_t = s.temperature > 0.0f ? s.temperature : 1.0f;
        ops::LogprobEntropy lh = ops::token_logprob_entropy(rows, Tensor::from_ints(targets, {T - k}), report_t);
        check_close("log-probs vs CPU scoring", lh.logprob.to_vector(), a[i].logprobs, Tol{1e-4, 1e-4});
        check_close("entropies vs CPU scoring", lh.entropy.to_vector(), a[i].entropies, Tol{1e-4, 1e-4});
      }
      if (s.temperature == 0.0f) {
        // Greedy on a sharpened model: the device picks the CPU's tokens (no near-ties to round differently).
        const std::vector<model::Sample> c = model::sample_groups(*cpu, prompts, o);
        for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].tokens == c[i].tokens);
      }
    }
  }
}
