#include "rl/math/diagnostics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gtpo::rl {
namespace {

// profile[t] = number of the given lengths > t, via counts per length and a suffix sum: O(responses +
// max_len).
std::vector<int> active_profile(const std::vector<int>& lengths, int max_len) {
  std::vector<int> count(static_cast<std::size_t>(max_len) + 1, 0);
  for (int l : lengths) ++count[static_cast<std::size_t>(l)];
  std::vector<int> profile(static_cast<std::size_t>(max_len), 0);
  int alive = 0;
  for (int t = max_len - 1; t >= 0; --t) {
    alive += count[static_cast<std::size_t>(t) + 1];
    profile[static_cast<std::size_t>(t)] = alive;
  }
  return profile;
}

}  // namespace

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::size_t n = std::min(x.size(), y.size());
  if (n < 2) return nan;
  double mx = 0.0, my = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    mx += x[k];
    my += y[k];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    sxy += (x[k] - mx) * (y[k] - my);
    sxx += (x[k] - mx) * (x[k] - mx);
    syy += (y[k] - my) * (y[k] - my);
  }
  if (sxx <= 0.0 || syy <= 0.0) return nan;
  return sxy / std::sqrt(sxx * syy);
}

Diagnostics compute_diagnostics(const std::vector<Response>& batch, const Grouping& groups,
                                const std::vector<bool>& keep, const std::vector<ResponseResult>& results) {
  Diagnostics d;
  d.groups = groups.members.size();
  std::vector<int> pos_lengths, neg_lengths;
  std::vector<double> h_all, a_all, h_pos, a_pos, h_neg, a_neg;
  std::size_t pos_tokens = 0, neg_tokens = 0, pos_negative = 0, neg_positive = 0, kept = 0;
  double penalty_sum = 0.0;
  int max_len = 0;
  for (std::size_t g = 0; g < groups.members.size(); ++g) {
    if (!keep[g]) {
      d.dropped_groups.push_back(groups.ids[g]);
      continue;
    }
    for (int i : groups.members[g]) {
      const Response& r = batch[i];
      const ResponseResult& res = results[i];
      const bool correct = is_correct(r);
      const int len = response_length(r);
      max_len = std::max(max_len, len);
      (correct ? pos_lengths : neg_lengths).push_back(len);
      ++kept;
      d.truncated += r.truncated ? 1 : 0;
      penalty_sum += res.overlong_penalty;
      if (res.overlong_penalty < 0.0f) ++d.overlong_penalised;
      d.overlong_penalty_min = std::min(d.overlong_penalty_min, static_cast<double>(res.overlong_penalty));
      const bool has_h = r.entropies.size() == static_cast<std::size_t>(len);
      for (int t = 0; t < len; ++t) {
        const double a = res.advantages[static_cast<std::size_t>(t)];
        d.tokens_in_loss += res.loss_mask[static_cast<std::size_t>(t)];
        if (correct) {
          ++pos_tokens;
          pos_negative += a < 0.0 ? 1 : 0;
        } else {
          ++neg_tokens;
          neg_positive += a > 0.0 ? 1 : 0;
        }
        if (!has_h) continue;
        const double h = entropy_at(r, t);
        h_all.push_back(h);
        a_all.push_back(a);
        (correct ? h_pos : h_neg).push_back(h);
        (correct ? a_pos : a_neg).push_back(a);
      }
    }
  }
  d.tokens = pos_tokens + neg_tokens;
  d.d_profile = active_profile(pos_lengths, max_len);
  d.h_profile = active_profile(neg_lengths, max_len);
  d.frac_correct_negative =
      pos_tokens ? static_cast<double>(pos_negative) / static_cast<double>(pos_tokens) : 0.0;
  d.frac_incorrect_positive =
      neg_tokens ? static_cast<double>(neg_positive) / static_cast<double>(neg_tokens) : 0.0;
  d.entropy_adv_corr = pearson(h_all, a_all);
  d.entropy_adv_corr_correct = pearson(h_pos, a_pos);
  d.entropy_adv_corr_incorrect = pearson(h_neg, a_neg);
  d.dropped_group_fraction =
      d.groups ? static_cast<double>(d.dropped_groups.size()) / static_cast<double>(d.groups) : 0.0;
  d.overlong_penalty_mean = kept ? penalty_sum / static_cast<double>(kept) : 0.0;
  return d;
}

double logprob_advantage_covariance(const std::vector<std::vector<float>>& logprobs,
                                    const std::vector<ResponseResult>& results) {
  double n = 0.0, mean_lp = 0.0, mean_a = 0.0;
  const std::size_t responses = std::min(logprobs.size(), results.size());
  auto for_each_token = [&](auto&& f) {
    for (std::size_t i = 0; i < responses; ++i) {
      const ResponseResult& r = results[i];
      const std::size_t len = std::min({logprobs[i].size(), r.advantages.size(), r.loss_mask.size()});
      for (std::size_t t = 0; t < len; ++t)
        if (r.loss_mask[t]) f(static_cast<double>(logprobs[i][t]), static_cast<double>(r.advantages[t]));
    }
  };
  for_each_token([&](double lp, double a) {
    n += 1.0;
    mean_lp += lp;
    mean_a += a;
  });
  if (n < 2.0) return std::numeric_limits<double>::quiet_NaN();
  mean_lp /= n;
  mean_a /= n;
  double cov = 0.0;
  for_each_token([&](double lp, double a) { cov += (lp - mean_lp) * (a - mean_a); });
  return cov / n;
}

}  // namespace gtpo::rl
