// dapo_forking's token selection (entropy or the random control) and its two normalisers, by hand.
#include <catch2/catch.hpp>
#include <set>
#include <utility>

#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/entropy_mask.h"
#include "rl/math/loss_aggregation.h"

using namespace gtpo::rl;

namespace {

RlConfig forking(ForkingNorm norm, ForkingSelect select = ForkingSelect::Entropy, double rho = 0.2) {
  RlConfig cfg = defaults_for("dapo_forking");
  cfg.overlong = Overlong::None;
  cfg.dynamic_sampling = false;
  cfg.dapo_forking = {rho, norm, select};
  return cfg;
}

Response resp(bool correct, std::vector<float> h, const std::string& group = "q") {
  Response r;
  r.group = group;
  r.correct = correct;
  r.entropies = std::move(h);
  return r;
}

// Ten tokens; the two largest entropies are 0.9 (response 0, token 1) and 0.8 (response 1, token 0).
const std::vector<Response> kBatch = {resp(true, {0.1f, 0.9f, 0.5f}), resp(false, {0.8f, 0.2f}),
                                      resp(true, {0.3f}), resp(false, {0.05f, 0.7f, 0.6f, 0.4f})};

std::vector<std::vector<float>> weights(const AdvantageResult& r) {
  std::vector<std::vector<uint8_t>> masks;
  for (const ResponseResult& x : r.responses) masks.push_back(x.loss_mask);
  const auto counted = normaliser_masks(r.responses, 0, r.responses.size());
  return token_loss_weights(masks, LossAgg::TokenMean, &counted);
}

std::set<std::pair<size_t, size_t>> kept(const std::vector<ResponseResult>& results) {
  std::set<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < results.size(); ++i)
    for (size_t t = 0; t < results[i].loss_mask.size(); ++t)
      if (results[i].loss_mask[t]) out.insert({i, t});
  return out;
}

}  // namespace

TEST_CASE("dapo_forking: rho 0.2 of 10 tokens keeps the two highest-entropy ones") {
  for (ForkingNorm norm : {ForkingNorm::All, ForkingNorm::Kept}) {
    const AdvantageResult r = compute_advantages(kBatch, forking(norm));
    CHECK(kept(r.responses) == std::set<std::pair<size_t, size_t>>{{0, 1}, {1, 0}});
  }
  // ρ = 0.3: k = 3, τ = 0.7.
  const AdvantageResult r3 =
      compute_advantages(kBatch, forking(ForkingNorm::All, ForkingSelect::Entropy, 0.3));
  CHECK(kept(r3.responses) == std::set<std::pair<size_t, size_t>>{{0, 1}, {1, 0}, {3, 1}});
}

TEST_CASE("dapo_forking.norm all divides by all 10 response tokens, kept by the 2 kept ones") {
  // The paper's J = 1/Σ|o_i| · Σ 1[H ≥ τ]·(...): each kept token weighs 1/10.
  const auto all = weights(compute_advantages(kBatch, forking(ForkingNorm::All)));
  CHECK(all[0] == std::vector<float>{0.0f, 0.1f, 0.0f});
  CHECK(all[1] == std::vector<float>{0.1f, 0.0f});
  CHECK(all[2] == std::vector<float>{0.0f});
  CHECK(all[3] == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
  // Masked out of numerator and denominator: 1/2 each, 1/ρ = 5 times the paper's weight.
  const auto kept_only = weights(compute_advantages(kBatch, forking(ForkingNorm::Kept)));
  CHECK(kept_only[0] == std::vector<float>{0.0f, 0.5f, 0.0f});
  CHECK(kept_only[1] == std::vector<float>{0.5f, 0.0f});
  CHECK(kept_only[3] == std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f});
}

TEST_CASE("dapo_forking.norm all with seq-mean-token-mean counts each response's whole length") {
  RlConfig cfg = forking(ForkingNorm::All);
  cfg.loss_agg = LossAgg::SeqMeanTokenMean;
  const AdvantageResult r = compute_advantages(kBatch, cfg);
  std::vector<std::vector<uint8_t>> masks;
  for (const ResponseResult& x : r.responses) masks.push_back(x.loss_mask);
  const auto counted = normaliser_masks(r.responses, 0, r.responses.size());
  const auto w = token_loss_weights(masks, cfg.loss_agg, &counted);
  // S = 4 responses with a counted token; T_0 = 3, T_1 = 2.
  CHECK(w[0][1] == Approx(1.0 / 12));
  CHECK(w[1][0] == Approx(1.0 / 8));
}

TEST_CASE("dapo_forking.select random keeps exactly ceil(rho N) loss tokens, a function of the seed") {
  std::vector<Response> batch;
  for (int i = 0; i < 12; ++i) {
    std::vector<float> h;
    for (int t = 0; t < 5 + i; ++t) h.push_back(static_cast<float>((t * 7 + i) % 11) / 10.0f);
    batch.push_back(resp(i % 3 == 0, h));
  }
  batch[5].truncated = true;  // out of the pool under rl.mask_truncated
  RlConfig cfg = forking(ForkingNorm::All, ForkingSelect::Random, 0.23);
  cfg.mask_truncated = true;
  BatchContext context;
  std::set<std::set<std::pair<size_t, size_t>>> sets;
  for (uint64_t seed : {1u, 2u, 3u}) {
    context.seed = seed;
    const AdvantageResult a = compute_advantages(batch, cfg, context);
    const AdvantageResult b = compute_advantages(batch, cfg, context);
    size_t pool = 0;
    for (const Response& r : batch) pool += r.truncated ? 0 : r.entropies.size();
    const auto picked = kept(a.responses);
    CHECK(picked.size() == static_cast<size_t>(std::ceil(0.23 * static_cast<double>(pool))));
    CHECK(picked == kept(b.responses));
    for (const auto& [i, t] : picked) CHECK(i != 5);
    // norm all: the normaliser still counts the whole pool, not the truncated response.
    CHECK(a.responses[0].norm_mask == std::vector<uint8_t>(5, 1));
    CHECK(a.responses[5].norm_mask == std::vector<uint8_t>(10, 0));
    sets.insert(picked);
  }
  CHECK(sets.size() == 3);  // another seed, another set
}

TEST_CASE("forking_keep_count: ceil(rho N), at least one, at most N") {
  CHECK(forking_keep_count(0, 0.2) == 0);
  CHECK(forking_keep_count(10, 0.2) == 2);
  CHECK(forking_keep_count(11, 0.2) == 3);
  CHECK(forking_keep_count(3, 0.01) == 1);
  CHECK(forking_keep_count(7, 1.0) == 7);
}
