// Loss normalisers (rl.loss_agg), computed on the host over a whole mini-batch before it is split into
// micro-batches, so that summing Σ weight·loss over any split gives the same loss and gradient.
#pragma once
#include <cstdint>
#include <vector>

#include "rl/math/rl_config.h"
#include "rl/math/rollout.h"

namespace gtpo::rl {

// masks[i][t] = 1 when token t of response i is in the loss (ResponseResult::loss_mask); |o_i| =
// masks[i].size(). Returns weights with the masks' shape such that the mini-batch loss is Σ_i Σ_t
// weight[i][t] · ℓ_{i,t}. With T_i = Σ_t mask_{i,t}, T = Σ_i T_i, S = number of responses with T_i > 0 (fully
// masked responses, e.g. dropped groups, count as absent) and L = max |o_i| over those S responses:
//   token-mean               mask / T                 (DAPO, GTPO Eq. 7)
//   seq-mean-token-mean      mask / (S · T_i)         (GRPO Eq. 2)
//   seq-mean-token-sum       mask / S
//   seq-mean-token-sum-norm  mask / (S · L)           (Dr. GRPO: a constant G · max_len)
// Everything is 0 when no token is in the loss.
// COUNTED, when given (same shape), replaces the masks in T_i, T, S and L, the normaliser: a token the
// algorithm took out of the loss can still count in the denominator (dapo_forking.norm all).
std::vector<std::vector<float>> token_loss_weights(
    const std::vector<std::vector<uint8_t>>& masks, LossAgg agg,
    const std::vector<std::vector<uint8_t>>* counted = nullptr);

// For sequence-level losses, GRPO-S Eq. 10: L = −Σ_i v_i · min(ŵ_i Â_i, clip(ŵ_i) Â_i) with v_i = 1/S for
// the S responses with any token in the loss and 0 for the others, i.e. −(1/G) Σ_i over the mini-batch.
// (ŵ_i itself, Eq. 11, averages the token ratios over all |o_i| tokens.)
std::vector<float> sequence_loss_weights(const std::vector<std::vector<uint8_t>>& masks);

// Per response, ResponseResult::norm_mask where the algorithm set one, else loss_mask: the COUNTED masks of
// token_loss_weights for responses [first, last).
std::vector<std::vector<uint8_t>> normaliser_masks(const std::vector<ResponseResult>& responses,
                                                   std::size_t first, std::size_t last);

}  // namespace gtpo::rl
