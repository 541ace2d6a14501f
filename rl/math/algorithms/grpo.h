// GRPO's advantage, reused by the methods that change only the loss (gspo, cispo, clip_cov, kl_cov) or add
// to it (entropy_adv).
#pragma once
#include "rl/math/algorithm.h"

namespace gtpo::rl::algorithms {

// r_i = c_i (or the reward functions' r_i) + length penalty; Â_i = (r_i − mean_g r)/(std_g r + ε) on every
// token (Eq. 1); a group whose rewards are all equal gets 0.
void grpo_compute(const AlgorithmInput& in, AdvantageResult& out);

// verl's actor defaults, which the methods compared with GTPO run with unless their paper says otherwise:
// PPO's clip 0.2/0.2, a token mean, no dynamic sampling, no overlong penalty.
void verl_defaults(RlConfig& c);

}  // namespace gtpo::rl::algorithms
