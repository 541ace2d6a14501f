// Model outputs against the independent PyTorch reference (scripts/reference/model_reference.py), which
// wrote the fixtures in tests/fixtures/: logits, loss and the gradient of every parameter.
#include <catch2/catch.hpp>
#include <cstring>

#include "model/checkpoint.h"
#include "runtime/io/safetensors.h"
#include "runtime/ops.h"
#include "tests/support/backends.h"

using namespace gtpo;

namespace {
void check_fixture(const std::string& name) {
  const std::string dir = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/" + name;
  model::LoadedModel loaded = model::load_model(dir);
  model::Transformer& m = *loaded.model;
  io::SafetensorsFile expected = io::SafetensorsFile::load(dir + "/expected.safetensors");
  const io::SafetensorsEntry& tok_entry = expected.at("tokens");
  std::vector<int32_t> tokens(tok_entry.bytes.size() / 4);
  std::memcpy(tokens.data(), tok_entry.bytes.data(), tok_entry.bytes.size());
  const int64_t B = tok_entry.shape[0], T = tok_entry.shape[1], V = m.config().vocab_size;
  Tensor ids = Tensor::from_ints(tokens, {B, T});

  Tensor logits = m.forward(ids);
  CHECK(testing::max_abs_diff(logits.to_vector(), expected.read_f32("logits")) < 1e-4);

  // Mean next-token cross-entropy, as the reference computes it.
  std::vector<int32_t> targets(static_cast<size_t>(B * (T - 1)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t + 1 < T; ++t) targets[static_cast<size_t>(b * (T - 1) + t)] = tokens[static_cast<size_t>(b * T + t + 1)];
  Tensor shifted = ops::reshape(ops::slice(logits, 1, 0, T - 1), {B * (T - 1), V});
  Tensor loss = ops::cross_entropy(shifted, Tensor::from_ints(targets, {B * (T - 1)}));
  CHECK(loss.item() == Approx(expected.read_f32("loss")[0]).epsilon(1e-5));
  loss.backward();
  for (const optim::Parameter& p : m.parameters()) {
    INFO("gradient of " << p.name);
    REQUIRE(p.tensor.grad().defined());
    CHECK(testing::max_abs_diff(p.tensor.grad().to_vector(), expected.read_f32("grad." + p.name)) < 1e-4);
  }
}
}  // namespace

TEST_CASE("model: gpt2 logits, loss and every gradient match the PyTorch reference (1e-4)", "[model][reference]") {
  check_fixture("gpt2_tiny");
}

TEST_CASE("model: llama with grouped-query attention matches the PyTorch reference (1e-4)", "[model][reference]") {
  check_fixture("llama_gqa");
}

TEST_CASE("model: qwen2 with q/k/v biases matches the PyTorch reference (1e-4)", "[model][reference]") {
  check_fixture("qwen2_bias");
}
