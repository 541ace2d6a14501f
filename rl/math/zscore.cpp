#include "rl/math/zscore.h"

#include <cmath>

namespace gtpo::rl {

Moments population_moments(const std::vector<double>& values) {
  Moments m;
  if (values.empty()) return m;
  double sum = 0.0;
  for (double v : values) sum += v;
  m.mean = sum / static_cast<double>(values.size());
  // Two-pass variance: exact enough for rewards near ±1 with tiny spreads.
  double sq = 0.0;
  for (double v : values) sq += (v - m.mean) * (v - m.mean);
  m.std = std::sqrt(sq / static_cast<double>(values.size()));
  return m;
}

void zscore_in_place(std::vector<double>& values, double eps, bool divide_by_std) {
  bool all_equal = true;
  for (double v : values) all_equal = all_equal && v == values.front();
  if (all_equal) {
    for (double& v : values) v = 0.0;
    return;
  }
  const Moments m = population_moments(values);
  const double scale = divide_by_std ? 1.0 / (m.std + eps) : 1.0;
  for (double& v : values) v = (v - m.mean) * scale;
}

}  // namespace gtpo::rl
