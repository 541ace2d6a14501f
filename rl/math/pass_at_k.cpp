#include "rl/math/pass_at_k.h"

#include "runtime/error.h"

namespace gtpo::rl {
namespace {
void check_args(const char* what, int64_t n, int64_t c, int64_t k) {
  GTPO_CHECK(n >= 1, what, ": need at least one sample, got n = ", n);
  GTPO_CHECK(c >= 0 && c <= n, what, ": correct count c = ", c, " must be in [0, n = ", n, "]");
  GTPO_CHECK(k >= 1 && k <= n, what, ": k = ", k, " must be in [1, n = ", n,
             "] (k > n samples cannot be drawn)");
}
}  // namespace

double pass_at_k(int64_t n, int64_t c, int64_t k) {
  check_args("pass@k", n, c, k);
  // Fewer than k wrong samples: every draw of k contains a correct one.
  if (n - c < k) return 1.0;
  double all_wrong = 1.0;  // C(n−c, k) / C(n, k)
  for (int64_t i = n - c + 1; i <= n; ++i) all_wrong *= 1.0 - static_cast<double>(k) / static_cast<double>(i);
  return 1.0 - all_wrong;
}

double mean_at_k(int64_t n, int64_t c, int64_t k) {
  check_args("mean@k", n, c, k);
  return static_cast<double>(c) / static_cast<double>(n);
}

std::vector<int64_t> pass_at_k_ks(int64_t max_k) {
  GTPO_CHECK(max_k >= 1, "pass@k: the largest k must be >= 1, got ", max_k);
  std::vector<int64_t> ks;
  for (int64_t k = 1; k <= max_k; k *= 2) {
    ks.push_back(k);
    if (k > max_k / 2) break;  // the next doubling would pass max_k (and could overflow)
  }
  if (ks.back() != max_k) ks.push_back(max_k);
  return ks;
}

double mean_pass_at_k(const std::vector<int64_t>& correct, int64_t n, int64_t k) {
  if (correct.empty()) return 0.0;
  double sum = 0.0;
  for (int64_t c : correct) sum += pass_at_k(n, c, k);
  return sum / static_cast<double>(correct.size());
}

}  // namespace gtpo::rl
