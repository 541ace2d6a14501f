// The token selections of Clip-Cov and KL-Cov (Cui et al. 2025; rl/math/algorithms/clip_cov.cpp, kl_cov.cpp),
// over the loss tokens of one mini-batch flattened in item order. They are computed from π_old and the
// advantages, host data fixed before the mini-batch is split, so a micro-batch split never changes them.
#pragma once
#include <cstdint>
#include <vector>

namespace gtpo::rl {

// Cov_t = (A_t − mean A)(log π_old,t − mean log π_old), the means over the tokens with in_loss[t] = 1;
// 0 for the others.
std::vector<double> token_covariances(const std::vector<float>& old_logprobs,
                                      const std::vector<float>& advantages,
                                      const std::vector<uint8_t>& in_loss);

// Clip-Cov: of the loss tokens with lb < Cov_t < ub, max(1, ⌊ratio · N⌋) (N loss tokens) picked at random by
// a generator seeded with SEED (all of them when there are fewer). 1 = selected.
std::vector<uint8_t> clip_cov_selection(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                                        double ratio, double lb, double ub, uint64_t seed);

// KL-Cov: the max(1, ⌊ratio · N⌋) loss tokens with the largest Cov_t (ties: the earlier token). 1 = selected.
std::vector<uint8_t> kl_cov_selection(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                                      double ratio);

}  // namespace gtpo::rl
