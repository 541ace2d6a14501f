// Clip-Cov (Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for Reasoning Language
// Models"): PPO's clip, with a random few tokens whose covariance Cov(log π_old, Â) lies in (lb, ub)
// detached, max(1, ⌊ratio · N⌋) of the N loss tokens; a detached token has no loss and no gradient.
#include <limits>

#include "rl/math/covariance_selection.h"
#include "rl/math/losses/loss.h"

namespace gtpo::rl::losses {
namespace {

LossTerm term(const TokenRatio& w, double, double a, bool selected, const RlConfig& c) {
  if (selected) return {0.0, 0.0, ClipStatus::Selected};
  const LossTerm s = clipped_surrogate(w.ratio, a, c);
  return {s.loss, s.dloss * w.dratio(), s.status};
}

std::vector<uint8_t> select(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                            const RlConfig& c, uint64_t seed) {
  return clip_cov_selection(cov, in_loss, c.clip_cov.ratio, c.clip_cov.lb, c.clip_cov.ub, seed);
}

std::vector<RlKey> keys() {
  using config::field;
  using config::number;
  const double inf = std::numeric_limits<double>::infinity();
  return {
      field("clip_cov", "ratio", &RlConfig::clip_cov, &ClipCovConfig::ratio, number(0, 1, true),
            "clip_cov: share of the loss tokens detached (at least one), with rl.policy_loss clip_cov"),
      field("clip_cov", "lb", &RlConfig::clip_cov, &ClipCovConfig::lb, number(-inf, inf),
            "clip_cov: candidates have lb < Cov(log π_old, Â) < ub"),
      field("clip_cov", "ub", &RlConfig::clip_cov, &ClipCovConfig::ub, number(-inf, inf),
            "clip_cov: upper end of the candidates' covariance band"),
  };
}

}  // namespace

PolicyLoss clip_cov() {
  return {.name = "clip_cov",
          .summary = "clip with a random few high-covariance tokens detached, clip_cov.*",
          .token_term = term,
          .select = select,
          .reads_dual_clip = true,
          .keys = keys};
}

}  // namespace gtpo::rl::losses
