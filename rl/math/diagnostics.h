// What a researcher needs to see about one batch's advantages (see docs/algorithms.md, "Diagnostics").
#pragma once
#include <vector>

#include "rl/math/grouping.h"
#include "rl/math/rollout.h"

namespace gtpo::rl {

// Fills every field of Diagnostics from the batch and the finished per-response results. keep[g] says
// whether group g of the grouping survived dynamic sampling.
Diagnostics compute_diagnostics(const std::vector<Response>& batch, const Grouping& groups,
                                const std::vector<bool>& keep, const std::vector<ResponseResult>& results);

// Pearson correlation of two equally long samples; NaN when fewer than two points or either is constant.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

// Covariance between the sampling policy's log-prob log π_old(o_t) and the advantage Ã_t over the tokens that
// enter the loss (loss_mask 1), logprobs[i] and results[i] describing response i. Its sign predicts the
// entropy change of a policy-gradient step (Cui et al. 2025, "The Entropy Mechanism of RL for Reasoning
// LMs": dH ≈ -η Cov(log π, A)), so a persistently positive value foreshadows entropy collapse. NaN with
// fewer than two such tokens.
double logprob_advantage_covariance(const std::vector<std::vector<float>>& logprobs,
                                    const std::vector<ResponseResult>& results);

}  // namespace gtpo::rl
