// DAPO with forking tokens: the policy loss keeps only a share ρ of the batch's loss tokens, the
// highest-entropy ones (Wang et al. 2025) or, as the control, the same number drawn at random.
#pragma once
#include <cstdint>
#include <vector>

#include "rl/math/rollout.h"

namespace gtpo::rl {

// k = ⌈ρ·N⌉ for a pool of N tokens, at least 1 (0 for an empty pool).
std::size_t forking_keep_count(std::size_t pool, double rho);

// Among the tokens whose loss_mask is 1, keeps those with H ≥ τ, where τ is the k-th largest entropy and
// k = forking_keep_count(N, ρ) (N = tokens in the pool); clears the mask of the rest. Ties at τ are all kept,
// as with a quantile threshold, so slightly more than k tokens can survive. Returns τ (0 when the pool is
// empty).
double apply_top_entropy_mask(const std::vector<Response>& batch, std::vector<ResponseResult>& results,
                              double rho);

// The control for the selection (dapo_forking.select random): keeps exactly k = forking_keep_count(N, ρ) of
// the pool's tokens, the k with the smallest counter_hash(SEED, i, t), so the set is a pure function of the
// seed and the masks (uniform without replacement), and clears the mask of the rest. Returns k.
std::size_t apply_random_token_mask(std::vector<ResponseResult>& results, double rho, uint64_t seed);

}  // namespace gtpo::rl
