// The policy objective (policy_loss_terms, rl/math/losses/loss.h) as one autograd node over the per-token
// log-probs (and entropies) of π_θ.
#pragma once
#include "rl/math/losses/loss.h"
#include "runtime/tensor.h"

namespace gtpo::rl {

// logprobs [N] and entropies [N] are π_θ's (from ops::token_logprob_entropy); entropies may be undefined
// when entropy_coef == 0. Returns the scalar loss; fills metrics and clip status if given.
Tensor policy_loss(const Tensor& logprobs, const Tensor& entropies, const PolicyLossInputs& inputs,
                   const RlConfig& config, PolicyLossMetrics* metrics = nullptr,
                   ClipStatuses* clip = nullptr);

}  // namespace gtpo::rl
