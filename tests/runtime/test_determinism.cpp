// Bitwise determinism of training with the runtime alone: a 2-layer attention stack (embedding, RMSNorm,
// RoPE, grouped-query attention, SwiGLU, cross-entropy) trained for 20 AdamW steps gives identical
// losses and parameters run to run and with 1 vs 2 threads. (The MLP case is in test_optim.cpp.)
#include <omp.h>

#include <catch2/catch.hpp>

#include "tests/support/determinism.h"
#include <cstring>

#include "runtime/ops.h"
#include "runtime/optim/adamw.h"
#include "runtime/optim/grad_clip.h"
#include "tests/support/random.h"

using namespace gtpo;
using testing::bitwise_equal;

namespace {
constexpr int64_t B = 6, T = 37, C = 48, H = 4, KV = 2, D = C / H, F = 96, V = 29, L = 2;

struct Run {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};

Run train(int threads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  optim::ParameterStore store;
  uint64_t seed = 100;
  auto param = [&](const std::string& name, const Shape& shape, float scale) {
    return store.add(name, testing::random_tensor(shape, seed++, -scale, scale));
  };
  Tensor embed = param("embed", {V, C}, 0.3f);
  std::vector<std::vector<Tensor>> layers;
  for (int64_t l = 0; l < L; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    layers.push_back({param(p + "norm1", {C}, 1.0f), param(p + "q", {H * D, C}, 0.2f), param(p + "k", {KV * D, C}, 0.2f),
                      param(p + "v", {KV * D, C}, 0.2f), param(p + "o", {C, H * D}, 0.2f), param(p + "norm2", {C}, 1.0f),
                      param(p + "gate", {F, C}, 0.2f), param(p + "up", {F, C}, 0.2f), param(p + "down", {C, F}, 0.2f)});
  }
  Tensor head = param("head", {V, C}, 0.2f);
  optim::AdamW adam(store, {3e-3f, 0.9f, 0.99f, 1e-8f, 0.01f});
  Tensor tokens = testing::random_ids({B, T}, 7, static_cast<int32_t>(V));
  std::vector<int32_t> ids = tokens.to_int_vector(), next(ids.size(), -100), pos(ids.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      pos[static_cast<size_t>(b * T + t)] = static_cast<int32_t>(t);
      if (t + 1 < T) next[static_cast<size_t>(b * T + t)] = ids[static_cast<size_t>(b * T + t + 1)];
    }
  Tensor positions = Tensor::from_ints(pos, {B, T}), targets = Tensor::from_ints(next, {B * T});
  Run run;
  for (int step = 0; step < 20; ++step) {
    Tensor x = ops::embedding(embed, tokens);
    for (const auto& w : layers) {
      Tensor h = ops::rms_norm(x, w[0], 1e-6f);
      Tensor q = ops::rope(ops::reshape(ops::linear(h, w[1]), {B, T, H, D}), positions, 10000.0f);
      Tensor k = ops::rope(ops::reshape(ops::linear(h, w[2]), {B, T, KV, D}), positions, 10000.0f);
      Tensor v = ops::reshape(ops::linear(h, w[3]), {B, T, KV, D});
      x = ops::add(x, ops::linear(ops::reshape(ops::attention(q, k, v), {B, T, H * D}), w[4]));
      Tensor h2 = ops::rms_norm(x, w[5], 1e-6f);
      x = ops::add(x, ops::linear(ops::mul(ops::silu(ops::linear(h2, w[6])), ops::linear(h2, w[7])), w[8]));
    }
    Tensor loss = ops::cross_entropy(ops::reshape(ops::linear(x, head), {B * T, V}), targets);
    loss.backward();
    optim::clip_grad_norm(store, 1.0f);
    adam.step();
    store.zero_grad();
    run.losses.push_back(loss.item());
  }
  for (const optim::Parameter& p : store) run.params.push_back(p.tensor.to_vector());
  omp_set_num_threads(saved);
  return run;
}

}  // namespace

TEST_CASE("determinism: a 2-layer attention stack trains bit-identically across runs and thread counts",
          "[determinism][attention]") {
  Run a = train(2), b = train(2), c = train(1);
  CHECK(a.losses.back() < a.losses.front());
  CHECK(bitwise_equal(a.losses, b.losses));
  CHECK(bitwise_equal(a.losses, c.losses));
  REQUIRE(a.params.size() == c.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    CHECK(bitwise_equal(a.params[i], b.params[i]));
    CHECK(bitwise_equal(a.params[i], c.params[i]));
  }
}
