// Sample-based evaluation metrics for n samples per problem of which c are correct.
//
// pass@k is the unbiased estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on
// Code"): the probability that at least one of k samples drawn without replacement from the n is correct,
// 1 − C(n−c, k) / C(n, k). Binomials overflow long before realistic n, so it is computed as the product
// 1 − Π_{i=n−c+1..n} (1 − k/i), which is exact in real arithmetic and stays in [0, 1] in floating point.
#pragma once
#include <cstdint>
#include <vector>

namespace gtpo::rl {

// Requires 1 <= k <= n and 0 <= c <= n; throws gtpo::Error naming the values otherwise.
double pass_at_k(int64_t n, int64_t c, int64_t k);

// Expected fraction of correct samples among k drawn from the n: c / n for every k (the unbiased estimate),
// with the same argument checks as pass_at_k so the two are reported for the same k.
double mean_at_k(int64_t n, int64_t c, int64_t k);

// The ks that evaluation reports for eval.k = K: 1, 2, 4, ... up to K, and K itself when it is not a
// power of two. K must be >= 1.
std::vector<int64_t> pass_at_k_ks(int64_t max_k);

// pass@k averaged over problems, each with n samples and correct[i] correct ones. Empty input gives 0.
double mean_pass_at_k(const std::vector<int64_t>& correct, int64_t n, int64_t k);

}  // namespace gtpo::rl
