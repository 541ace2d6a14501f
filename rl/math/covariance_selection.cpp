#include "rl/math/covariance_selection.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"
#include "runtime/random.h"

namespace gtpo::rl {
namespace {

std::size_t loss_tokens(const std::vector<uint8_t>& in_loss) {
  return static_cast<std::size_t>(std::count(in_loss.begin(), in_loss.end(), uint8_t{1}));
}

std::size_t how_many(double ratio, std::size_t n) {
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::floor(ratio * static_cast<double>(n))));
}

}  // namespace

std::vector<double> token_covariances(const std::vector<float>& old_logprobs,
                                      const std::vector<float>& advantages,
                                      const std::vector<uint8_t>& in_loss) {
  GTPO_CHECK(old_logprobs.size() == advantages.size() && advantages.size() == in_loss.size(),
             "token_covariances: ", old_logprobs.size(), " log-probs, ", advantages.size(),
             " advantages and ", in_loss.size(), " mask values");
  const double n = static_cast<double>(loss_tokens(in_loss));
  std::vector<double> cov(in_loss.size(), 0.0);
  if (n == 0) return cov;
  double mean_a = 0.0, mean_lp = 0.0;
  for (std::size_t t = 0; t < in_loss.size(); ++t)
    if (in_loss[t]) mean_a += advantages[t], mean_lp += old_logprobs[t];
  mean_a /= n;
  mean_lp /= n;
  for (std::size_t t = 0; t < in_loss.size(); ++t)
    if (in_loss[t]) cov[t] = (advantages[t] - mean_a) * (old_logprobs[t] - mean_lp);
  return cov;
}

std::vector<uint8_t> clip_cov_selection(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                                        double ratio, double lb, double ub, uint64_t seed) {
  std::vector<std::size_t> candidates;
  for (std::size_t t = 0; t < cov.size(); ++t)
    if (in_loss[t] && cov[t] > lb && cov[t] < ub) candidates.push_back(t);
  const std::size_t k = std::min(how_many(ratio, loss_tokens(in_loss)), candidates.size());
  uint64_t state = seed;
  for (std::size_t j = 0; j < k; ++j) {  // the first k of a Fisher-Yates shuffle
    const std::size_t pick = j + static_cast<std::size_t>(splitmix64_next(state) % (candidates.size() - j));
    std::swap(candidates[j], candidates[pick]);
  }
  std::vector<uint8_t> selected(cov.size(), 0);
  for (std::size_t j = 0; j < k; ++j) selected[candidates[j]] = 1;
  return selected;
}

std::vector<uint8_t> kl_cov_selection(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                                      double ratio) {
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < cov.size(); ++t)
    if (in_loss[t]) order.push_back(t);
  const std::size_t k = std::min(how_many(ratio, order.size()), order.size());
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cov[a] > cov[b]; });
  std::vector<uint8_t> selected(cov.size(), 0);
  for (std::size_t j = 0; j < k; ++j) selected[order[j]] = 1;
  return selected;
}

}  // namespace gtpo::rl
