// The spec's properties, on seeded random batches.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <random>

#include "random_batch.h"
#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/loss_aggregation.h"

using namespace gtpo::rl;
using gtpo::rl::testing::BatchShape;
using gtpo::rl::testing::random_batch;

namespace {

RlConfig plain(const std::string& algo) {
  RlConfig cfg = defaults_for(algo);
  cfg.overlong = Overlong::None;
  cfg.dynamic_sampling = false;
  return cfg;
}

}  // namespace

TEST_CASE("GTPO conserves reward mass at every position: (a1+a2)d_t and -(a1+a2)h_t") {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<double> alpha(0.0, 2.0);
  for (int trial = 0; trial < 40; ++trial) {
    RlConfig cfg = plain("gtpo");
    cfg.gtpo.alpha1 = alpha(rng);
    cfg.gtpo.alpha2 = alpha(rng);
    cfg.gtpo.scope = trial % 2 ? Scope::Batch : Scope::Group;
    const auto batch = random_batch(rng, {});
    const AdvantageResult res = compute_advantages(batch, cfg);
    // Sum per scope and position; the batch scope pools every group under one key.
    std::map<std::string, std::vector<double>> pos_sum, neg_sum;
    std::map<std::string, std::vector<int>> d, h;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const std::string key = cfg.gtpo.scope == Scope::Batch ? "all" : batch[i].group;
      const auto& shaped = res.responses[i].shaped;
      REQUIRE(shaped.size() == batch[i].entropies.size());
      for (std::size_t t = 0; t < shaped.size(); ++t) {
        auto& sum = batch[i].correct ? pos_sum[key] : neg_sum[key];
        auto& cnt = batch[i].correct ? d[key] : h[key];
        if (sum.size() <= t) sum.resize(t + 1, 0.0), cnt.resize(t + 1, 0);
        sum[t] += shaped[t];
        cnt[t] += 1;
      }
    }
    const double a = cfg.gtpo.alpha1 + cfg.gtpo.alpha2;
    for (const auto& [key, sums] : pos_sum)
      for (std::size_t t = 0; t < sums.size(); ++t)
        if (d[key][t] > 0) CHECK(sums[t] == Approx(a * d[key][t]).epsilon(1e-5));
    for (const auto& [key, sums] : neg_sum)
      for (std::size_t t = 0; t < sums.size(); ++t)
        if (h[key][t] > 0) CHECK(sums[t] == Approx(-a * h[key][t]).epsilon(1e-5));
  }
}

TEST_CASE("GTPO with alpha2 = 0 and joint is the length-weighted z-score of the +-1 outcomes") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 30; ++trial) {
    RlConfig cfg = plain("gtpo");
    cfg.gtpo.alpha2 = 0.0;
    const auto batch = random_batch(rng, {.groups = 3, .group_size = 6, .max_len = 30});
    const AdvantageResult res = compute_advantages(batch, cfg);
    for (const std::string g : {"g0", "g1", "g2"}) {
      double tokens = 0.0, sum = 0.0;
      for (const Response& r : batch)
        if (r.group == g) {
          tokens += r.entropies.size();
          sum += r.entropies.size() * (r.correct ? 1.0 : -1.0);
        }
      const double mean = tokens > 0 ? sum / tokens : 0.0;
      double var = 0.0;
      for (const Response& r : batch)
        if (r.group == g) var += r.entropies.size() * std::pow((r.correct ? 1.0 : -1.0) - mean, 2);
      const double sd = tokens > 0 ? std::sqrt(var / tokens) : 0.0;
      for (std::size_t i = 0; i < batch.size(); ++i) {
        if (batch[i].group != g) continue;
        const double want = sd > 0 ? ((batch[i].correct ? 1.0 : -1.0) - mean) / (sd + cfg.eps) : 0.0;
        for (float a : res.responses[i].advantages) CHECK(a == Approx(want).margin(1e-5));
      }
    }
  }
}

TEST_CASE("GTPO with alpha2 = 0 equals dapo's advantage when lengths are equal") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 30; ++trial) {
    RlConfig gtpo = plain("gtpo");
    gtpo.gtpo.alpha2 = 0.0;
    const auto batch = random_batch(rng, {.groups = 4, .group_size = 8, .max_len = 16, .equal_lengths = true});
    const AdvantageResult a = compute_advantages(batch, gtpo);
    const AdvantageResult b = compute_advantages(batch, plain("dapo"));
    for (std::size_t i = 0; i < batch.size(); ++i)
      for (std::size_t t = 0; t < a.responses[i].advantages.size(); ++t)
        CHECK(a.responses[i].advantages[t] == Approx(b.responses[i].advantages[t]).margin(1e-5));
  }
}

TEST_CASE("uniform entropy gives every O+ token a1+a2 and every O- token -(a1+a2)") {
  std::mt19937 rng(5);
  for (MeanKind kind : {MeanKind::Arith, MeanKind::Geo}) {
    for (int trial = 0; trial < 10; ++trial) {
      RlConfig cfg = plain("gtpo");
      cfg.gtpo.weights = kind;
      auto batch = random_batch(rng, {});
      const float h = std::uniform_real_distribution<float>(0.0f, 3.0f)(rng);
      for (Response& r : batch)
        for (float& e : r.entropies) e = h;
      const AdvantageResult res = compute_advantages(batch, cfg);
      for (std::size_t i = 0; i < batch.size(); ++i)
        for (float s : res.responses[i].shaped) CHECK(s == Approx(batch[i].correct ? 1.1 : -1.1).margin(1e-6));
    }
  }
}

TEST_CASE("GRPO-S with beta2 = 0 equals dapo's sequence advantage") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    RlConfig s = plain("grpo_s");
    s.grpo_s.beta2 = 0.0;
    const auto batch = random_batch(rng, {});
    const AdvantageResult a = compute_advantages(batch, s);
    const AdvantageResult b = compute_advantages(batch, plain("dapo"));
    for (std::size_t i = 0; i < batch.size(); ++i)
      CHECK(a.responses[i].seq_advantage == Approx(b.responses[i].seq_advantage).margin(1e-6));
  }
}

TEST_CASE("an all-correct group yields zero advantage under grpo and dapo") {
  std::mt19937 rng(3);
  for (const std::string algo : {"grpo", "dapo", "dr_grpo"}) {
    for (bool ds : {false, true}) {
      RlConfig cfg = plain(algo);
      cfg.dynamic_sampling = ds;
      auto batch = random_batch(rng, {});
      for (Response& r : batch)
        if (r.group == "g1") r.correct = true;
      const AdvantageResult res = compute_advantages(batch, cfg);
      for (std::size_t i = 0; i < batch.size(); ++i)
        if (batch[i].group == "g1") {
          CHECK(res.responses[i].seq_advantage == 0.0f);
          for (float a : res.responses[i].advantages) CHECK(a == 0.0f);
        }
    }
  }
}

TEST_CASE("loss weights do not depend on how the mini-batch is split into micro-batches") {
  std::mt19937 rng(17);
  std::uniform_int_distribution<int> len(0, 20);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (LossAgg agg : {LossAgg::TokenMean, LossAgg::SeqMeanTokenMean, LossAgg::SeqMeanTokenSum,
                      LossAgg::SeqMeanTokenSumNorm}) {
    std::vector<std::vector<uint8_t>> masks(12);
    std::vector<std::vector<double>> loss(12);
    for (std::size_t i = 0; i < masks.size(); ++i) {
      const int n = len(rng);
      for (int t = 0; t < n; ++t) {
        masks[i].push_back(u(rng) < 0.7 ? 1 : 0);
        loss[i].push_back(u(rng) * 2 - 1);
      }
    }
    const auto w = token_loss_weights(masks, agg);
    double full = 0.0;
    for (std::size_t i = 0; i < masks.size(); ++i)
      for (std::size_t t = 0; t < masks[i].size(); ++t) full += w[i][t] * loss[i][t];
    // Any split: micro-batches take rows of the mini-batch weights; the sums add up to the same loss.
    for (std::size_t micro : {1u, 2u, 3u, 5u, 12u}) {
      double split = 0.0;
      for (std::size_t start = 0; start < masks.size(); start += micro) {
        double part = 0.0;
        for (std::size_t i = start; i < std::min(masks.size(), start + micro); ++i)
          for (std::size_t t = 0; t < masks[i].size(); ++t) part += w[i][t] * loss[i][t];
        split += part;
      }
      CHECK(split == Approx(full).margin(1e-9));
    }
    // The mini-batch normaliser differs from a per-micro-batch one: the whole point of computing it here.
    const std::vector<std::vector<uint8_t>> first_half(masks.begin(), masks.begin() + 6);
    const auto w_half = token_loss_weights(first_half, agg);
    bool same = true;
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t t = 0; t < masks[i].size(); ++t) same = same && w_half[i][t] == w[i][t];
    CHECK_FALSE(same);
  }
}

TEST_CASE("GTPO separate normalisation does not depend on alpha1 and alpha2 (the reading's known flaw)") {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 10; ++trial) {
    const auto batch = random_batch(rng, {.zero_entropy_prob = 0.0});
    RlConfig a = plain("gtpo");
    a.gtpo.adv_norm = AdvNorm::Separate;
    RlConfig b = a;
    b.gtpo.alpha1 = 0.3;
    b.gtpo.alpha2 = 0.7;
    const AdvantageResult ra = compute_advantages(batch, a);
    const AdvantageResult rb = compute_advantages(batch, b);
    for (std::size_t i = 0; i < batch.size(); ++i)
      for (std::size_t t = 0; t < ra.responses[i].advantages.size(); ++t)
        CHECK(ra.responses[i].advantages[t] == Approx(rb.responses[i].advantages[t]).margin(1e-3));
  }
}

TEST_CASE("results are deterministic and follow each response through a reordering of the batch") {
  std::mt19937 rng(31);
  for (const std::string algo : {"grpo", "dapo_forking", "gtpo", "grpo_s"}) {
    INFO(algo);
    const auto batch = random_batch(rng, {});
    const RlConfig cfg = plain(algo);
    const AdvantageResult first = compute_advantages(batch, cfg);
    const AdvantageResult again = compute_advantages(batch, cfg);
    std::vector<std::size_t> order(batch.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<Response> shuffled;
    for (std::size_t i : order) shuffled.push_back(batch[i]);
    const AdvantageResult moved = compute_advantages(shuffled, cfg);
    for (std::size_t k = 0; k < order.size(); ++k) {
      const ResponseResult& a = first.responses[order[k]];
      CHECK(a.advantages == again.responses[order[k]].advantages);  // bit for bit
      CHECK(a.loss_mask == moved.responses[k].loss_mask);
      REQUIRE(a.advantages.size() == moved.responses[k].advantages.size());
      for (std::size_t t = 0; t < a.advantages.size(); ++t)
        CHECK(a.advantages[t] == Approx(moved.responses[k].advantages[t]).margin(1e-5));
    }
  }
}

TEST_CASE(
    "gtpo.outcome and grpo_s.outcome reward: the outcome part takes r_i, and with r_i = +-1 nothing changes") {
  std::mt19937 rng(99);
  for (const char* algo : {"gtpo", "grpo_s"}) {
    INFO(algo);
    for (int trial = 0; trial < 10; ++trial) {
      std::vector<Response> batch = random_batch(rng, {});
      RlConfig by_correctness = plain(algo), by_reward = plain(algo);
      (std::string(algo) == "gtpo" ? by_reward.gtpo.outcome : by_reward.grpo_s.outcome) = Outcome::Reward;
      // r_i = +-1 by correctness: the paper's binary reward, so the same advantages, bit for bit.
      for (Response& r : batch) r.reward = is_correct(r) ? 1.0 : -1.0;
      const AdvantageResult a = compute_advantages(batch, by_correctness),
                            b = compute_advantages(batch, by_reward);
      for (std::size_t i = 0; i < batch.size(); ++i) {
        CHECK(a.responses[i].shaped == b.responses[i].shaped);
        CHECK(a.responses[i].advantages == b.responses[i].advantages);
      }
      // Without r_i (no reward functions) the switch has nothing to read: +-1 again.
      for (Response& r : batch) r.reward.reset();
      const AdvantageResult c = compute_advantages(batch, by_reward);
      for (std::size_t i = 0; i < batch.size(); ++i) CHECK(a.responses[i].shaped == c.responses[i].shaped);
    }
  }
}

TEST_CASE("gtpo.outcome reward by hand: a lone active response gets alpha1 r_i +- alpha2") {
  // One group of two: a correct response with r = 0.5 and an incorrect one with r = -0.25, two tokens each.
  // Alone in its set at every position, each token's entropy weight is 1 (bonus exactly alpha2).
  Response one;
  one.group = std::string(1, 'g');  // (a literal assigned in a loop trips GCC 12's false -Wrestrict)
  one.entropies = {0.7f, 1.3f};
  std::vector<Response> batch(2, one);
  batch[0].correct = true;
  batch[0].reward = 0.5;
  batch[1].reward = -0.25;
  RlConfig cfg = plain("gtpo");
  cfg.gtpo.outcome = Outcome::Reward;
  cfg.gtpo.alpha1 = 1.0;
  cfg.gtpo.alpha2 = 0.1;
  const AdvantageResult res = compute_advantages(batch, cfg);
  for (float s : res.responses[0].shaped) CHECK(s == Approx(1.0 * 0.5 + 0.1));
  for (float s : res.responses[1].shaped) CHECK(s == Approx(1.0 * -0.25 - 0.1));
  RlConfig seq = plain("grpo_s");
  seq.grpo_s.outcome = Outcome::Reward;
  const AdvantageResult s = compute_advantages(batch, seq);
  REQUIRE(s.responses[0].shaped.size() == 1);
  CHECK(s.responses[0].shaped[0] == Approx(1.0 * 0.5 + 0.1));  // beta1 r_i + beta2 (n = 1: weight 1)
  CHECK(s.responses[1].shaped[0] == Approx(1.0 * -0.25 - 0.1));
}
