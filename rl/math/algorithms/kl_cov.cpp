// KL-Cov (Cui et al. 2025, "The Entropy Mechanism of RL for Reasoning LMs"): the k = max(1, ⌊ratio · N⌋)
// loss tokens of a mini-batch with the largest Cov_t = (Â_t − mean Â) · (log π_old,t − mean log π_old) get a
// penalty on how far their log-prob moved; no token is clipped:
//   ℓ_t = −Â_t w_t + coef · |log π_θ,t − log π_old,t|   (selected),   ℓ_t = −Â_t w_t   (the others).
// The paper uses k = 2e-3 of the tokens for Qwen2.5-7B (2e-4 for 32B; verl's default is 2e-4) and
// coef 1 (verl's function falls back to 1; its actor.yaml sets 0.1). Cov comes from π_old over the
// mini-batch, as for clip_cov. rl.clip_low and rl.clip_high have no effect on this loss.
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  verl_defaults(c);
  c.policy_loss = "kl_cov";
}

}  // namespace

Algorithm kl_cov() {
  return {
      .name = "kl_cov",
      .summary = "KL-Cov: GRPO's advantage, no clip, |log ratio| penalty on the top Cov(log pi, A) tokens",
      .set_defaults = defaults,
      .compute = grpo_compute};
}

}  // namespace gtpo::rl::algorithms
