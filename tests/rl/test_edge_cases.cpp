// Edge cases with defined results.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <limits>

#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "runtime/error.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;

namespace {

RlConfig plain(const std::string& algo) {
  RlConfig cfg = defaults_for(algo);
  cfg.overlong = Overlong::None;
  cfg.dynamic_sampling = false;
  return cfg;
}

Response resp(const std::string& group, bool correct, std::vector<float> h) {
  Response r;
  r.group = group;
  r.correct = correct;
  r.entropies = std::move(h);
  return r;
}

}  // namespace

TEST_CASE("a group of one: lone response gets +-(a1+a2), zero advantage, dropped under dynamic sampling") {
  const std::vector<Response> batch = {resp("q", true, {0.3f, 2.0f, 0.0f})};
  for (const std::string algo : {"grpo", "dr_grpo", "dapo", "dapo_forking", "gtpo", "grpo_s", "rloo",
                                 "reinforce_pp", "gspo", "cispo", "clip_cov", "kl_cov", "entropy_adv"}) {
    INFO(algo);
    const AdvantageResult res = compute_advantages(batch, plain(algo));
    REQUIRE(res.responses[0].advantages.size() == 3);
    for (float a : res.responses[0].advantages) CHECK(a == 0.0f);
    CHECK_FALSE(res.responses[0].dropped);
  }
  const AdvantageResult g = compute_advantages(batch, plain("gtpo"));
  for (float s : g.responses[0].shaped) CHECK(s == Approx(1.1));
  const AdvantageResult s = compute_advantages(batch, plain("grpo_s"));
  CHECK(s.responses[0].shaped[0] == Approx(1.1));

  RlConfig ds = plain("gtpo");
  ds.dynamic_sampling = true;
  const AdvantageResult d = compute_advantages(batch, ds);
  CHECK(d.responses[0].dropped);
  CHECK(d.responses[0].shaped.empty());
  CHECK(d.responses[0].loss_mask == std::vector<uint8_t>{0, 0, 0});
  CHECK(d.diagnostics.dropped_groups == std::vector<std::string>{"q"});
  CHECK(d.diagnostics.dropped_group_fraction == 1.0);
}

TEST_CASE("all-correct and all-incorrect groups without dynamic sampling") {
  const std::vector<Response> pos = {resp("q", true, {1.0f, 2.0f}), resp("q", true, {3.0f, 2.0f})};
  const AdvantageResult g = compute_advantages(pos, plain("gtpo"));
  // Only entropy differences remain: 1 + 0.1·2·1/4 = 1.05, 1 + 0.1·2·3/4 = 1.15; second column uniform.
  CHECK(g.responses[0].shaped[0] == Approx(1.05));
  CHECK(g.responses[1].shaped[0] == Approx(1.15));
  CHECK(g.responses[0].shaped[1] == Approx(1.1));
  CHECK(g.responses[0].advantages[0] < 0.0f);  // outcome-free update: why dynamic sampling is on by default
  CHECK(g.diagnostics.frac_correct_negative == Approx(0.25));

  const std::vector<Response> neg = {resp("q", false, {1.0f}), resp("q", false, {3.0f})};
  const AdvantageResult n = compute_advantages(neg, plain("gtpo"));
  // Inverse entropy: the confident token takes the larger penalty: 1/1 / (1/1 + 1/3) = 0.75 → −1 − 0.1·2·0.75.
  CHECK(n.responses[0].shaped[0] == Approx(-1.15));
  CHECK(n.responses[1].shaped[0] == Approx(-1.05));
  for (const std::string algo : {"grpo", "dapo", "grpo_s"}) {
    INFO(algo);
    const AdvantageResult r = compute_advantages(neg, plain(algo));
    if (algo != "grpo_s")
      for (const auto& x : r.responses) CHECK(x.seq_advantage == 0.0f);
  }
}

TEST_CASE("zero-entropy columns: uniform weight for O+, all-zero O- column is uniform too") {
  const std::vector<Response> batch = {
      resp("q", true, {0.0f, 0.0f}), resp("q", true, {0.0f, 1.0f}),
      resp("q", false, {0.0f, 0.0f}), resp("q", false, {0.0f, 2.0f})};
  const AdvantageResult r = compute_advantages(batch, plain("gtpo"));
  // Column 1: Σ H = 0 on both sides → every token ±(α1 + α2).
  CHECK(r.responses[0].shaped[0] == Approx(1.1));
  CHECK(r.responses[1].shaped[0] == Approx(1.1));
  CHECK(r.responses[2].shaped[0] == Approx(-1.1));
  CHECK(r.responses[3].shaped[0] == Approx(-1.1));
  // Column 2: O+ all bonus on the non-zero token; O− nearly all penalty on the zero-entropy token.
  CHECK(r.responses[0].shaped[1] == Approx(1.0));
  CHECK(r.responses[1].shaped[1] == Approx(1.2));
  CHECK(r.responses[2].shaped[1] == Approx(-1.2).margin(1e-6));
  CHECK(r.responses[3].shaped[1] == Approx(-1.0).margin(1e-6));
  for (const auto& x : r.responses)
    for (float a : x.advantages) CHECK(std::isfinite(a));
}

TEST_CASE("empty responses have no tokens and a defined sequence reward") {
  const std::vector<Response> batch = {resp("q", true, {}), resp("q", true, {1.0f}), resp("q", false, {}),
                                       resp("q", false, {0.5f, 0.5f})};
  for (const std::string algo : {"grpo", "dr_grpo", "dapo", "dapo_forking", "gtpo", "grpo_s", "rloo",
                                 "reinforce_pp", "gspo", "cispo", "clip_cov", "kl_cov", "entropy_adv"}) {
    INFO(algo);
    const AdvantageResult r = compute_advantages(batch, plain(algo));
    CHECK(r.responses[0].advantages.empty());
    CHECK(r.responses[0].loss_mask.empty());
    CHECK(r.responses[1].advantages.size() == 1);
    CHECK(std::isfinite(r.responses[0].seq_advantage));
  }
  // GRPO-S: Ĥ = 0 for an empty response; O+ weights 2·0/1 and 2·1/1; O− 1/ε dominates → −1 − 0.2.
  const AdvantageResult s = compute_advantages(batch, plain("grpo_s"));
  CHECK(s.responses[0].shaped[0] == Approx(1.0));
  CHECK(s.responses[1].shaped[0] == Approx(1.2));
  CHECK(s.responses[2].shaped[0] == Approx(-1.2).margin(1e-5));
  CHECK(s.responses[3].shaped[0] == Approx(-1.0).margin(1e-5));
}

TEST_CASE("very long responses are fast: O(total tokens)") {
  std::vector<Response> batch;
  for (int i = 0; i < 16; ++i) {
    const int n = i == 0 ? 10000 : 10000 - 37 * i;
    Response r = resp(i % 2 ? "q1" : "q0", i % 3 == 0, {});
    for (int t = 0; t < n; ++t) r.entropies.push_back(static_cast<float>((t * 7 + i) % 13) / 5.0f);
    batch.push_back(std::move(r));
  }
  for (const std::string algo : {"gtpo", "grpo_s", "dapo_forking"}) {
    for (Scope scope : {Scope::Group, Scope::Batch}) {
      RlConfig cfg = plain(algo);
      cfg.gtpo.scope = scope;
      const auto start = std::chrono::steady_clock::now();
      const AdvantageResult r = compute_advantages(batch, cfg);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      INFO(algo << " took " << seconds << " s");
      CHECK(seconds < 1.0);
      CHECK(r.responses[0].advantages.size() == 10000);
      CHECK(r.diagnostics.tokens > 150000);
    }
  }
  // One very long response among short ones: the long tail is a lone response, ±(α1 + α2).
  std::vector<Response> mixed = {resp("q", true, std::vector<float>(10000, 0.5f)), resp("q", true, {1.0f, 1.0f}),
                                 resp("q", false, {1.0f})};
  const AdvantageResult m = compute_advantages(mixed, plain("gtpo"));
  CHECK(m.responses[0].shaped[9999] == Approx(1.1));
  CHECK(m.diagnostics.d_profile.size() == 10000);
  CHECK(m.diagnostics.d_profile[0] == 2);
  CHECK(m.diagnostics.d_profile[2] == 1);
  CHECK(m.diagnostics.h_profile[0] == 1);
  CHECK(m.diagnostics.h_profile[1] == 0);
}

TEST_CASE("NaN or Inf entropy is an error naming the response and position") {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<Response> batch = {resp("a", true, {1.0f}), resp("a", false, {1.0f}),
                                   resp("b", true, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, bad})};
    for (const std::string algo : {"grpo", "gtpo", "grpo_s"})
      CHECK_THROWS_WITH(compute_advantages(batch, plain(algo)),
                        Contains("response 2") && Contains("position 5") && Contains("finite"));
  }
}

TEST_CASE("negative entropies: round-off is read as 0, anything else is an error") {
  std::vector<Response> batch = {resp("a", true, {-1e-5f, 1.0f}), resp("a", false, {1.0f})};
  const AdvantageResult r = compute_advantages(batch, plain("gtpo"));
  CHECK(r.responses[0].shaped[0] == Approx(1.1));  // lone active O+ at t = 1 anyway
  batch[1].entropies[0] = -0.5f;
  CHECK_THROWS_WITH(compute_advantages(batch, plain("gtpo")),
                    Contains("response 1") && Contains("position 0") && Contains(">= 0"));
}

TEST_CASE("length and entropies must agree, entropy-free algorithms accept a bare length") {
  Response r = resp("a", true, {1.0f, 1.0f});
  r.length = 3;
  CHECK_THROWS_WITH(compute_advantages({r}, plain("grpo")), Contains("response 0") && Contains("length 3"));
  Response bare;
  bare.group = "a";
  bare.length = 4;
  Response other = bare;
  other.correct = true;
  const AdvantageResult g = compute_advantages({bare, other}, plain("grpo"));
  CHECK(g.responses[0].advantages.size() == 4);
  CHECK(g.responses[0].seq_advantage == Approx(-1.0).margin(1e-5));
  CHECK_THROWS_WITH(compute_advantages({bare, other}, plain("gtpo")),
                    Contains("needs one entropy per token") && Contains("response 0"));
}

TEST_CASE("a truncated response is incorrect, and rl.mask_truncated drops it from the loss") {
  Response t = resp("q", true, {1.0f, 1.0f});
  t.truncated = true;
  const std::vector<Response> batch = {resp("q", true, {1.0f}), t};
  RlConfig cfg = plain("dapo");
  const AdvantageResult a = compute_advantages(batch, cfg);
  CHECK(a.responses[1].seq_advantage < 0.0f);
  CHECK(a.responses[1].loss_mask == std::vector<uint8_t>{1, 1});
  set_rl_option(cfg, "rl.mask_truncated", "true");
  const AdvantageResult b = compute_advantages(batch, cfg);
  CHECK(b.responses[1].seq_advantage == a.responses[1].seq_advantage);  // still in the statistics
  CHECK(b.responses[1].loss_mask == std::vector<uint8_t>{0, 0});
  CHECK(b.responses[0].loss_mask == std::vector<uint8_t>{1});
  CHECK(b.diagnostics.tokens_in_loss == 1);
  CHECK(b.diagnostics.truncated == 1);
}

TEST_CASE("dapo_forking keeps the top-rho entropy tokens of the batch, ties included") {
  std::vector<Response> batch = {resp("q", true, {0, 1, 2, 3, 4}), resp("q", false, {5, 6, 7, 8, 9})};
  RlConfig cfg = plain("dapo_forking");
  const AdvantageResult r = compute_advantages(batch, cfg);  // ρ = 0.2 of 10 tokens: H ≥ 8
  CHECK(r.responses[0].loss_mask == std::vector<uint8_t>{0, 0, 0, 0, 0});
  CHECK(r.responses[1].loss_mask == std::vector<uint8_t>{0, 0, 0, 1, 1});
  CHECK(r.diagnostics.tokens_in_loss == 2);
  // Advantages are dapo's, untouched by the mask.
  const AdvantageResult d = compute_advantages(batch, plain("dapo"));
  CHECK(r.responses[0].advantages == d.responses[0].advantages);

  set_rl_option(cfg, "dapo_forking.rho", "0.25");  // ⌈2.5⌉ = 3 tokens: H ≥ 7
  CHECK(compute_advantages(batch, cfg).responses[1].loss_mask == std::vector<uint8_t>{0, 0, 1, 1, 1});
  batch[0].entropies[4] = 8.0f;  // a tie with the threshold survives as well
  set_rl_option(cfg, "dapo_forking.rho", "0.2");
  const AdvantageResult t = compute_advantages(batch, cfg);
  CHECK(t.responses[0].loss_mask == std::vector<uint8_t>{0, 0, 0, 0, 1});
  CHECK(t.responses[1].loss_mask == std::vector<uint8_t>{0, 0, 0, 1, 1});
  // Masked tokens (mask_truncated) are not in the pool.
  batch = {resp("q", true, {0, 1, 2, 3, 4}), resp("q", false, {5, 6, 7, 8, 9})};
  batch[1].truncated = true;
  cfg.mask_truncated = true;
  const AdvantageResult m = compute_advantages(batch, cfg);  // pool = 5 tokens → k = 1: H ≥ 4
  CHECK(m.responses[0].loss_mask == std::vector<uint8_t>{0, 0, 0, 0, 1});
  CHECK(m.responses[1].loss_mask == std::vector<uint8_t>{0, 0, 0, 0, 0});
}

TEST_CASE("dynamic sampling drops exactly the all-equal groups, in order") {
  std::vector<Response> batch = {resp("a", true, {1}), resp("a", true, {1}), resp("b", true, {1}),
                                 resp("b", false, {1}), resp("c", false, {1}), resp("c", false, {1})};
  for (const std::string algo : {"dapo", "dapo_forking", "gtpo", "grpo_s"}) {
    INFO(algo);
    RlConfig cfg = defaults_for(algo);
    CHECK(cfg.dynamic_sampling);
    cfg.overlong = Overlong::None;
    const AdvantageResult r = compute_advantages(batch, cfg);
    CHECK(r.diagnostics.dropped_groups == std::vector<std::string>{"a", "c"});
    CHECK(r.diagnostics.dropped_group_fraction == Approx(2.0 / 3.0));
    CHECK(r.responses[0].dropped);
    CHECK_FALSE(r.responses[2].dropped);
    CHECK(r.responses[2].advantages[0] > 0.0f);
    CHECK(r.responses[4].loss_mask[0] == 0);
  }
  CHECK_FALSE(defaults_for("grpo").dynamic_sampling);
  CHECK_FALSE(defaults_for("dr_grpo").dynamic_sampling);
}

TEST_CASE("gtpo batch scope pools d_t, h_t and the statistics over groups") {
  const std::vector<Response> batch = {resp("a", true, {1.0f}), resp("a", false, {1.0f}),
                                       resp("b", true, {3.0f}), resp("b", false, {1.0f})};
  RlConfig cfg = plain("gtpo");
  const AdvantageResult g = compute_advantages(batch, cfg);
  CHECK(g.responses[0].shaped[0] == Approx(1.1));  // lone O+ of its group
  set_rl_option(cfg, "gtpo.scope", "batch");
  const AdvantageResult b = compute_advantages(batch, cfg);
  CHECK(b.responses[0].shaped[0] == Approx(1.0 + 0.1 * 2 * 1.0 / 4.0));
  CHECK(b.responses[2].shaped[0] == Approx(1.0 + 0.1 * 2 * 3.0 / 4.0));
}

TEST_CASE("geo weights follow Appendix C") {
  const std::vector<Response> batch = {resp("q", true, {1.0f}), resp("q", true, {4.0f}), resp("q", false, {1.0f}),
                                       resp("q", false, {4.0f})};
  RlConfig cfg = plain("gtpo");
  set_rl_option(cfg, "gtpo.weights", "geo");
  const AdvantageResult r = compute_advantages(batch, cfg);  // GM = 2
  CHECK(r.responses[0].shaped[0] == Approx(1.0 + 0.1 * 0.5).epsilon(1e-5));
  CHECK(r.responses[1].shaped[0] == Approx(1.0 + 0.1 * 2.0).epsilon(1e-5));
  CHECK(r.responses[2].shaped[0] == Approx(-1.0 - 0.1 * 2.0).epsilon(1e-5));
  CHECK(r.responses[3].shaped[0] == Approx(-1.0 - 0.1 * 0.5).epsilon(1e-5));
  RlConfig s = plain("grpo_s");
  set_rl_option(s, "grpo_s.weights", "geo");
  const std::vector<Response> seq = {resp("q", true, {1.0f, 4.0f}), resp("q", true, {4.0f, 4.0f}),
                                     resp("q", false, {2.0f}), resp("q", false, {2.0f})};
  const AdvantageResult g = compute_advantages(seq, s);  // Ĥ = 2 and 4, GM = √8
  CHECK(g.responses[0].shaped[0] == Approx(1.0 + 0.1 * 2.0 / std::sqrt(8.0)).epsilon(1e-5));
  CHECK(g.responses[1].shaped[0] == Approx(1.0 + 0.1 * 4.0 / std::sqrt(8.0)).epsilon(1e-5));
  CHECK(g.responses[2].shaped[0] == Approx(-1.1).epsilon(1e-5));
}

TEST_CASE("diagnostics: sign fractions and entropy-advantage correlation") {
  const std::vector<Response> batch = {
      resp("q", true, {2.0f, 0.5f, 1.0f}), resp("q", true, {0.5f, 1.5f}),
      resp("q", false, {0.2f, 1.0f, 0.4f}), resp("q", false, {1.0f, 0.5f})};
  RlConfig cfg = plain("gtpo");
  const AdvantageResult joint = compute_advantages(batch, cfg);
  CHECK(joint.diagnostics.frac_correct_negative == 0.0);
  CHECK(joint.diagnostics.frac_incorrect_positive == 0.0);
  CHECK(joint.diagnostics.tokens == 10);
  CHECK(joint.diagnostics.entropy_adv_corr_correct > 0.9);  // Ã+ grows with H (column-wise, so not exactly linear)
  CHECK(joint.diagnostics.entropy_adv_corr_incorrect > 0.5);  // Ã− is least negative at high H
  set_rl_option(cfg, "gtpo.adv_norm", "separate");
  const AdvantageResult sep = compute_advantages(batch, cfg);
  CHECK(sep.diagnostics.frac_correct_negative == Approx(0.4));  // 2 of 5 O+ tokens
  CHECK(sep.diagnostics.frac_incorrect_positive == Approx(0.4));
  const AdvantageResult grpo = compute_advantages(batch, plain("grpo"));
  CHECK(std::isnan(grpo.diagnostics.entropy_adv_corr_correct));  // constant advantage within O+
}
