// The policy losses of rl/math/losses/ on hand cases, through the same records and objective the update
// calls. This suite links gtpo_rl_math alone: the loss math needs no tensor.
#include <catch2/catch.hpp>
#include <cmath>

#include "rl/math/algorithm_registry.h"
#include "rl/math/losses/loss.h"
#include "runtime/error.h"

using namespace gtpo;
using namespace gtpo::rl;

namespace {

TokenRatio ratio_of(double log_ratio) { return {log_ratio, std::exp(log_ratio), true}; }

// One token of weight 1 with ratio W and advantage A under CFG.
PolicyLossTerms one_token(double w, float a, const RlConfig& cfg) {
  PolicyLossInputs in;
  in.old_logprobs = {0.0f};
  in.advantages = {a};
  in.token_weights = {1.0f};
  return policy_loss_terms({static_cast<float>(std::log(w))}, {}, in, cfg);
}

}  // namespace

TEST_CASE("losses: PPO's clip and dual clip on hand cases", "[rl][loss]") {
  RlConfig cfg = defaults_for("dapo");            // ε_low 0.2, ε_high 0.28
  PolicyLossTerms t = one_token(1.5, 1.0f, cfg);  // above 1 + 0.28 with A > 0: clipped, no gradient
  CHECK(t.loss == Approx(-1.28));
  CHECK(t.dloss_dlogprob[0] == 0.0f);
  CHECK(t.status[0] == ClipStatus::High);
  CHECK(t.metrics.clip_frac_high == 1.0);
  t = one_token(0.5, -1.0f, cfg);  // below 1 - 0.2 with A < 0: clipped
  CHECK(t.loss == Approx(0.8));
  CHECK(t.dloss_dlogprob[0] == 0.0f);
  CHECK(t.status[0] == ClipStatus::Low);
  t = one_token(1.1, 1.0f, cfg);  // inside: -w A, d/dlog p = -w A
  CHECK(t.loss == Approx(-1.1));
  CHECK(t.dloss_dlogprob[0] == Approx(-1.1f));
  CHECK(t.status[0] == ClipStatus::None);
  cfg.dual_clip = 3.0;
  t = one_token(5.0, -1.0f, cfg);  // -min(-5, -0.8) = 5 > 3: the dual clip bounds it at 3
  CHECK(t.loss == Approx(3.0));
  CHECK(t.dloss_dlogprob[0] == 0.0f);
  CHECK(t.status[0] == ClipStatus::Dual);
  CHECK(t.metrics.dual_clip_frac == 1.0);
}

TEST_CASE("losses: CISPO, Clip-Cov and KL-Cov terms on hand cases", "[rl][loss]") {
  RlConfig cfg = defaults_for("dapo");
  const double lp = -0.5;
  // CISPO: -sg[clip(w)] A log π; the capped weight keeps a gradient.
  const PolicyLoss& cispo = find_policy_loss("cispo");
  LossTerm c = cispo.token_term(ratio_of(std::log(1.5)), lp, 1.0, false, cfg);
  CHECK(c.loss == Approx(-1.28 * -0.5));
  CHECK(c.dloss == Approx(-1.28));
  CHECK(c.status == ClipStatus::High);
  c = cispo.token_term(ratio_of(std::log(0.9)), lp, -2.0, false, cfg);
  CHECK(c.loss == Approx(-0.9 * -2.0 * -0.5));
  CHECK(c.dloss == Approx(1.8));
  CHECK(c.status == ClipStatus::None);
  // Clip-Cov: a selected token is detached; the others are PPO's clip.
  const PolicyLoss& clip_cov = find_policy_loss("clip_cov");
  c = clip_cov.token_term(ratio_of(std::log(1.1)), lp, 1.0, true, cfg);
  CHECK(c.loss == 0.0);
  CHECK(c.dloss == 0.0);
  CHECK(c.status == ClipStatus::Selected);
  c = clip_cov.token_term(ratio_of(std::log(1.1)), lp, 1.0, false, cfg);
  CHECK(c.loss == Approx(-1.1));
  CHECK(c.dloss == Approx(-1.1));
  // KL-Cov: no clip; a selected token pays coef·|log w|, whose gradient is 0 where the clamp holds.
  const PolicyLoss& kl_cov = find_policy_loss("kl_cov");
  cfg.kl_cov.coef = 0.5;
  c = kl_cov.token_term(ratio_of(0.3), lp, 1.0, true, cfg);
  CHECK(c.loss == Approx(-std::exp(0.3) + 0.5 * 0.3));
  CHECK(c.dloss == Approx(-std::exp(0.3) + 0.5));
  CHECK(c.status == ClipStatus::Selected);
  c = kl_cov.token_term(ratio_of(std::log(3.0)), lp, 1.0, false, cfg);  // far outside any clip range
  CHECK(c.loss == Approx(-3.0));
  CHECK(c.status == ClipStatus::None);
  c = kl_cov.token_term({20.0, std::exp(20.0), false}, lp, 1.0, true, cfg);
  CHECK(c.dloss == 0.0);
}

TEST_CASE("losses: unclipped is -w A with gradient -w A on every token, the clip loss at an open range",
          "[rl][loss]") {
  RlConfig cfg = defaults_for("dapo");
  set_rl_option(cfg, "rl.policy_loss", "unclipped");
  CHECK_FALSE(active_policy_loss(cfg).reads_clip_range);
  PolicyLossTerms t = one_token(1.5, 1.0f, cfg);  // clip would cap this at 1.28 with no gradient
  CHECK(t.loss == Approx(-1.5));
  CHECK(t.dloss_dlogprob[0] == Approx(-1.5f));
  CHECK(t.status[0] == ClipStatus::None);
  t = one_token(0.5, -2.0f, cfg);
  CHECK(t.loss == Approx(1.0));
  CHECK(t.dloss_dlogprob[0] == Approx(1.0f));
  // Beyond the ±20 clamp of log w the ratio holds still: no gradient.
  const LossTerm held =
      find_policy_loss("unclipped").token_term({25.0, std::exp(20.0), false}, -1.0, 1.0, false, cfg);
  CHECK(held.loss == Approx(-std::exp(20.0)));
  CHECK(held.dloss == 0.0);
  // The clip loss with ε_low = 1 and ε_high past every ratio is the same objective.
  RlConfig open = defaults_for("dapo");
  open.clip_low = 1.0;
  open.clip_high = 1e9;
  for (double w : {0.05, 0.7, 1.0, 1.3, 40.0})
    for (float a : {-1.5f, 0.5f}) {
      const PolicyLossTerms u = one_token(w, a, cfg), c = one_token(w, a, open);
      CHECK(u.loss == Approx(c.loss));
      CHECK(u.dloss_dlogprob[0] == Approx(c.dloss_dlogprob[0]));
    }
}

TEST_CASE("losses: the sequence loss's ratio, gradient and status on a hand case", "[rl][loss]") {
  RlConfig cfg = defaults_for("grpo_s");  // ε 0.2 / 0.28
  PolicyLossInputs in;
  in.old_logprobs = {0.0f, 0.0f, 0.0f};
  in.token_weights = {0.5f, 0.5f, 0.0f};
  in.sequence_level = true;
  in.seq_begin = {0, 2};
  in.seq_end = {2, 3};
  in.seq_advantages = {1.0f, -1.0f};
  in.seq_weights = {0.5f, 0.0f};  // the second response is out of the loss
  const std::vector<float> lp = {0.1f, -0.3f, 0.7f};
  for (MeanKind kind : {MeanKind::Arith, MeanKind::Geo}) {
    in.seq_ratio = kind;
    const PolicyLossTerms t = policy_loss_terms(lp, {}, in, cfg);
    const double w0 = std::exp(0.1f), w1 = std::exp(-0.3f);
    const double seq = kind == MeanKind::Arith ? (w0 + w1) / 2 : std::exp((0.1f + -0.3f) / 2.0);
    CHECK(t.loss == Approx(-0.5 * seq));  // inside the clip range: -v ŵ Â
    // dŵ/dlog π_t: w_t/|o| (arith) or ŵ/|o| (geo).
    CHECK(t.dloss_dlogprob[0] == Approx(-0.5 * (kind == MeanKind::Arith ? w0 : seq) / 2));
    CHECK(t.dloss_dlogprob[1] == Approx(-0.5 * (kind == MeanKind::Arith ? w1 : seq) / 2));
    CHECK(t.dloss_dlogprob[2] == 0.0f);
  }
  in.seq_ratio = MeanKind::Geo;
  in.old_logprobs = {-1.0f, -1.0f, 0.0f};  // ŵ = e: clipped at 1.28, every token of the response says so
  const PolicyLossTerms t = policy_loss_terms({0.0f, 0.0f, 0.0f}, {}, in, cfg);
  CHECK(t.loss == Approx(-0.5 * 1.28));
  CHECK(t.status[0] == ClipStatus::High);
  CHECK(t.status[1] == ClipStatus::High);
  CHECK(t.status[2] == ClipStatus::None);
  CHECK(t.dloss_dlogprob[0] == 0.0f);
  RlConfig cispo = cfg;
  cispo.policy_loss = "cispo";
  CHECK_THROWS_WITH(policy_loss_terms({0.0f, 0.0f, 0.0f}, {}, in, cispo),
                    Catch::Contains("needs rl.policy_loss clip"));
}

TEST_CASE("losses: the registry names every loss, its schema row and the algorithms' losses", "[rl][loss]") {
  std::vector<std::string> names;
  for (const PolicyLoss& l : all_policy_losses()) {
    names.emplace_back(l.name);
    CHECK(l.token_term != nullptr);
    CHECK(std::string(l.summary) != "");
    // The unread-settings check finds a loss's section by its name.
    if (l.keys != nullptr)
      for (const RlKey& k : l.keys()) CHECK(k.section == l.name);
  }
  CHECK(names == std::vector<std::string>{"clip", "cispo", "clip_cov", "kl_cov", "unclipped"});
  CHECK_THROWS_WITH(find_policy_loss("ppo"),
                    Catch::Contains("known losses: clip, cispo, clip_cov, kl_cov, unclipped"));
  const RlKey* row = find_rl_key("rl.policy_loss");
  REQUIRE(row != nullptr);
  CHECK(row->type == "clip|cispo|clip_cov|kl_cov|unclipped");
  RlConfig cfg;
  CHECK_THROWS_WITH(set_rl_option(cfg, "rl.policy_loss", "ppo"), Catch::Contains("rl.policy_loss"));
  set_rl_option(cfg, "rl.policy_loss", "kl_cov");
  CHECK(std::string(active_policy_loss(cfg).name) == "kl_cov");
  CHECK(active_policy_loss(cfg).select != nullptr);
  CHECK(find_rl_key("kl_cov.coef") != nullptr);
  for (const char* algo : {"gspo", "grpo_s"})
    CHECK(&active_policy_loss(defaults_for(algo)) == &sequence_policy_loss());
  CHECK(std::string(active_policy_loss(defaults_for("cispo")).name) == "cispo");
  CHECK(std::string(active_policy_loss(defaults_for("gtpo")).name) == "clip");
}
