// DAPO with forking tokens: the policy loss keeps only the highest-entropy tokens of the batch.
#pragma once
#include <vector>

#include "rl/math/rollout.h"

namespace gtpo::rl {

// Among the tokens whose loss_mask is 1, keeps those with H ≥ τ, where τ is the k-th largest entropy and
// k = ⌈ρ·N⌉ (N = tokens in the pool); clears the mask of the rest. Ties at τ are all kept, as with a
// quantile threshold, so slightly more than k tokens can survive. Returns τ (0 when the pool is empty).
double apply_top_entropy_mask(const std::vector<Response>& batch, std::vector<ResponseResult>& results,
                              double rho);

}  // namespace gtpo::rl
