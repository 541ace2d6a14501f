// Length penalties (rl.overlong). Each response gets one penalty R ≤ 0 that the algorithm adds to its
// sequence reward, or to every token's shaped reward, before normalisation. The O+/O− partition never
// looks at it.
#pragma once
#include <vector>

#include "rl/math/grouping.h"
#include "rl/math/rl_config.h"
#include "rl/math/rollout.h"

namespace gtpo::rl {

// DAPO soft overlong punishment: 0 up to L_max − L_cache, then linear down to −1 at L_max, −1 beyond.
double dapo_soft_penalty(int length, int l_max, int l_cache);

// GROP's piecewise penalty against the knee L (paper Appendix D): −½(|o|−L)/L on [L, 2L), −½ from 2L on,
// 0 below L (and 0 when L ≤ 0).
double grop_knee_penalty(int length, double knee);
// L = max((min + max)/2, mean) of the given lengths.
double grop_knee(const std::vector<int>& lengths);

// GROP for one group (γ1 = 0.75): easy (n/G ≥ γ1) → correct responses against the knee of the correct
// lengths; hard (n/G ≤ 1 − γ1) → none; otherwise the knee over all G, penalising the correct responses
// when n > m and the incorrect ones otherwise.
inline constexpr double kGropGamma1 = 0.75;
std::vector<double> grop_penalties(const std::vector<int>& lengths, const std::vector<bool>& correct);

// The penalty of every response of the batch under cfg.overlong. Throws gtpo::Error when dapo_soft has no
// L_max (sampler.max_new_tokens).
std::vector<double> overlong_penalties(const std::vector<Response>& batch, const Grouping& groups,
                                       const RlConfig& cfg, int max_new_tokens);

}  // namespace gtpo::rl
