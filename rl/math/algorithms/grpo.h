// GRPO's advantage, reused by the methods that change only the loss (gspo, cispo, clip_cov, kl_cov) or add
// to it (entropy_adv).
#pragma once
#include "rl/math/algorithm.h"

namespace gtpo::rl::algorithms {

// r_i = c_i (or the reward functions' r_i) + length penalty; Â_i = (r_i − mean_g r)/(std_g r + ε) on every
// token (Eq. 1); a group whose rewards are all equal gets 0.
void grpo_compute(const AlgorithmInput& in, AdvantageResult& out);

}  // namespace gtpo::rl::algorithms
