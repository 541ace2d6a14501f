// Clip-Cov (Cui et al. 2025, "The Entropy Mechanism of RL for Reasoning LMs"): entropy falls by about
// η·Cov(log π, A) per step, and a few tokens with a large covariance drive the collapse. Over the loss tokens
// of a mini-batch,
//   Cov_t = (Â_t − mean Â) · (log π_old,t − mean log π_old),
// the tokens with lb < Cov_t < ub are candidates, and max(1, ⌊ratio · N⌋) of them, picked at random, are
// detached (loss and gradient 0; they stay in the normaliser). The rest is GRPO's clipped surrogate.
// The paper's values (and verl's defaults): ratio 2e-4, lb 1, ub 5. verl computes Cov from the current
// log-probs of one micro-batch and skips tokens PPO already clipped; here it comes from π_old over the
// mini-batch (the same values at the first update of a step, independent of the micro-batch split), and the
// pick is seeded by train.seed and the step (rl/math/covariance_selection.h).
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  verl_defaults(c);
  c.policy_loss = "clip_cov";
}

}  // namespace

Algorithm clip_cov() {
  return {
      .name = "clip_cov",
      .summary = "Clip-Cov: GRPO's advantage and clip, a random few tokens of high Cov(log pi, A) detached",
      .set_defaults = defaults,
      .compute = grpo_compute};
}

}  // namespace gtpo::rl::algorithms
