#include <catch2/catch.hpp>
#include <cmath>

#include "rl/math/algorithm_registry.h"
#include "rl/math/loss_aggregation.h"
#include "rl/policy_loss.h"
#include "runtime/autograd.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::rl;

namespace {
struct Batch {
  std::vector<float> logprobs, old_logprobs, advantages, ref_logprobs, entropies;
  std::vector<std::vector<uint8_t>> masks;
};

Batch random_batch(uint64_t seed, int responses) {
  testing::TestRng rng(seed);
  Batch b;
  for (int i = 0; i < responses; ++i) {
    const int len = 1 + rng.integer(0, 9);
    b.masks.emplace_back(static_cast<size_t>(len), 1);
    if (rng.uniform() < 0.2) b.masks.back()[0] = 0;
    const float adv = rng.uniform(-1.5f, 1.5f);
    for (int t = 0; t < len; ++t) {
      const float old_lp = rng.uniform(-3.0f, -0.1f);
      b.old_logprobs.push_back(old_lp);
      b.logprobs.push_back(old_lp + rng.uniform(-0.4f, 0.4f));  // ratios in [0.67, 1.5]: some clipped
      b.advantages.push_back(adv + rng.uniform(-0.2f, 0.2f));
      b.ref_logprobs.push_back(old_lp + rng.uniform(-0.3f, 0.3f));
      b.entropies.push_back(rng.uniform(0.0f, 2.0f));
    }
  }
  return b;
}

std::vector<float> flatten(const std::vector<std::vector<float>>& v) {
  std::vector<float> out;
  for (const auto& x : v) out.insert(out.end(), x.begin(), x.end());
  return out;
}

PolicyLossInputs inputs_for(const Batch& b, LossAgg agg, size_t token_begin, size_t token_end) {
  std::vector<float> weights = flatten(token_loss_weights(b.masks, agg));
  PolicyLossInputs in;
  in.old_logprobs.assign(b.old_logprobs.begin() + token_begin, b.old_logprobs.begin() + token_end);
  in.advantages.assign(b.advantages.begin() + token_begin, b.advantages.begin() + token_end);
  in.ref_logprobs.assign(b.ref_logprobs.begin() + token_begin, b.ref_logprobs.begin() + token_end);
  in.token_weights.assign(weights.begin() + token_begin, weights.begin() + token_end);
  return in;
}
}  // namespace

TEST_CASE("policy loss: the gradient does not depend on the micro-batch split", "[rl][loss]") {
  for (LossAgg agg : {LossAgg::TokenMean, LossAgg::SeqMeanTokenMean, LossAgg::SeqMeanTokenSum, LossAgg::SeqMeanTokenSumNorm}) {
    INFO(to_string(agg));
    Batch b = random_batch(3, 12);
    RlConfig cfg = defaults_for("dapo");
    cfg.kl_coef = 0.05;
    cfg.entropy_coef = 0.01;
    const size_t n = b.logprobs.size();
    // Whole mini-batch.
    Tensor lp = Tensor::from_vector(b.logprobs, {static_cast<int64_t>(n)});
    lp.set_requires_grad(true);
    Tensor ent = Tensor::from_vector(b.entropies, {static_cast<int64_t>(n)});
    ent.set_requires_grad(true);
    policy_loss(lp, ent, inputs_for(b, agg, 0, n), cfg).backward();
    std::vector<float> whole = lp.grad().to_vector(), whole_ent = ent.grad().to_vector();
    // Three micro-batches at response boundaries, same normalisers.
    std::vector<size_t> cuts = {0};
    size_t at = 0;
    for (size_t i = 0; i < b.masks.size(); ++i) {
      at += b.masks[i].size();
      if (i == 3 || i == 7) cuts.push_back(at);
    }
    cuts.push_back(n);
    std::vector<float> split, split_ent;
    double loss_sum = 0.0;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      std::vector<float> part(b.logprobs.begin() + cuts[c], b.logprobs.begin() + cuts[c + 1]);
      std::vector<float> part_ent(b.entropies.begin() + cuts[c], b.entropies.begin() + cuts[c + 1]);
      Tensor plp = Tensor::from_vector(part, {static_cast<int64_t>(part.size())});
      plp.set_requires_grad(true);
      Tensor pent = Tensor::from_vector(part_ent, {static_cast<int64_t>(part.size())});
      pent.set_requires_grad(true);
      Tensor l = policy_loss(plp, pent, inputs_for(b, agg, cuts[c], cuts[c + 1]), cfg);
      loss_sum += l.item();
      l.backward();
      for (float g : plp.grad().to_vector()) split.push_back(g);
      for (float g : pent.grad().to_vector()) split_ent.push_back(g);
    }
    REQUIRE(split.size() == whole.size());
    for (size_t i = 0; i < n; ++i) {
      CHECK(split[i] == Approx(whole[i]).margin(1e-7));
      CHECK(split_ent[i] == Approx(whole_ent[i]).margin(1e-7));
    }
    PolicyLossMetrics m;
    Tensor again = Tensor::from_vector(b.logprobs, {static_cast<int64_t>(n)});
    policy_loss(again, ent.detach(), inputs_for(b, agg, 0, n), cfg, &m);
    CHECK(loss_sum == Approx(m.loss).margin(1e-6));
  }
}

TEST_CASE("policy loss: finite differences agree with the gradient (token and sequence level)", "[rl][loss][grad]") {
  Batch b = random_batch(5, 6);
  const int64_t n = static_cast<int64_t>(b.logprobs.size());
  for (bool seq_level : {false, true}) {
    for (MeanKind ratio : {MeanKind::Arith, MeanKind::Geo}) {
      INFO("sequence level " << seq_level << " geo ratio " << (ratio == MeanKind::Geo));
      RlConfig cfg = defaults_for(seq_level ? "grpo_s" : "gtpo");
      cfg.kl_coef = 0.1;
      cfg.kl_estimator = KlEstimator::K3;
      PolicyLossInputs in = inputs_for(b, LossAgg::TokenMean, 0, static_cast<size_t>(n));
      in.seq_ratio = ratio;
      if (seq_level) {
        in.sequence_level = true;
        int64_t at = 0;
        std::vector<float> seq_w = sequence_loss_weights(b.masks);
        for (size_t i = 0; i < b.masks.size(); ++i) {
          in.seq_begin.push_back(at);
          at += static_cast<int64_t>(b.masks[i].size());
          in.seq_end.push_back(at);
          in.seq_advantages.push_back(b.advantages[static_cast<size_t>(in.seq_begin.back())]);
          in.seq_weights.push_back(seq_w[i]);
          in.seq_is_weights.push_back(0.5f + 0.25f * static_cast<float>(i % 3));
        }
      }
      Tensor lp = Tensor::from_vector(b.logprobs, {n});
      lp.set_requires_grad(true);
      // Small steps: the clipped surrogate has kinks at the clip edges.
      CHECK(testing::gradcheck([&](const std::vector<Tensor>& x) { return policy_loss(x[0], Tensor(), in, cfg); }, {lp},
                               {1e-3, 1e-4, 2e-2}) <= 1);
    }
  }
}

// CISPO's value −sg[clip(w)]·Â·log π is not the function its gradient is of (the weight is held), so finite
// differences do not apply to it; tests/rl/test_methods.cpp checks its gradient against the numpy reference.
TEST_CASE("policy loss: finite differences agree for clip_cov and kl_cov with IS weights",
          "[rl][loss][grad]") {
  Batch b = random_batch(9, 6);
  const int64_t n = static_cast<int64_t>(b.logprobs.size());
  for (const char* kind : {"clip_cov", "kl_cov"}) {
    INFO(kind);
    RlConfig cfg = defaults_for("grpo");
    cfg.policy_loss = kind;
    PolicyLossInputs in = inputs_for(b, LossAgg::TokenMean, 0, static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t) {
      in.cov_selected.push_back(t % 4 == 1 ? 1 : 0);
      in.is_weights.push_back(t % 5 == 2 ? 0.0f : 0.6f + 0.1f * static_cast<float>(t % 7));
    }
    Tensor lp = Tensor::from_vector(b.logprobs, {n});
    lp.set_requires_grad(true);
    CHECK(
        testing::gradcheck([&](const std::vector<Tensor>& x) { return policy_loss(x[0], Tensor(), in, cfg); },
                           {lp}, {1e-3, 1e-4, 2e-2}) <= 1);
  }
}

TEST_CASE("policy loss: mismatched inputs are errors", "[rl][loss][errors]") {
  RlConfig cfg = defaults_for("gtpo");
  PolicyLossInputs in;
  in.old_logprobs = {0.0f};
  in.advantages = {1.0f};
  in.token_weights = {1.0f};
  CHECK_THROWS_WITH(policy_loss(Tensor::zeros({2}), Tensor(), in, cfg), Catch::Contains("2 tokens but 1 old log-probs"));
  cfg.kl_coef = 0.1;
  CHECK_THROWS_WITH(policy_loss(Tensor::zeros({1}), Tensor(), in, cfg), Catch::Contains("kl_coef is set"));
}
