#include "rl/math/entropy_weights.h"

#include <cmath>

namespace gtpo::rl {

void entropy_weights(const double* x, std::size_t count, bool positive, MeanKind kind, double eps,
                     double* out) {
  if (count == 0) return;
  const double n = static_cast<double>(count);
  if (kind == MeanKind::Geo) {
    double mean_log = 0.0;
    for (std::size_t k = 0; k < count; ++k) mean_log += std::log(x[k] + eps);
    mean_log /= n;
    for (std::size_t k = 0; k < count; ++k) {
      const double d = std::log(x[k] + eps) - mean_log;
      out[k] = std::exp(positive ? d : -d);
    }
    return;
  }
  if (positive) {
    double sum = 0.0;
    for (std::size_t k = 0; k < count; ++k) sum += x[k];
    // An all-deterministic column: the uniform weight keeps conservation (spec: bonus exactly α2).
    if (sum < eps) {
      for (std::size_t k = 0; k < count; ++k) out[k] = 1.0;
      return;
    }
    for (std::size_t k = 0; k < count; ++k) out[k] = n * x[k] / sum;
    return;
  }
  double sum_inv = 0.0;
  for (std::size_t k = 0; k < count; ++k) sum_inv += 1.0 / (x[k] + eps);
  for (std::size_t k = 0; k < count; ++k) out[k] = n * (1.0 / (x[k] + eps)) / sum_inv;
}

}  // namespace gtpo::rl
