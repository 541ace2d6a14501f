// Population mean/std and the z-score every algorithm normalises with.
#pragma once
#include <vector>

namespace gtpo::rl {

struct Moments {
  double mean = 0.0;
  double std = 0.0;  // population std (divides by N)
};

Moments population_moments(const std::vector<double>& values);

// v ← (v − mean) / (std + eps), or v ← v − mean when divide_by_std is false (Dr. GRPO).
// When every value is identical the result is exactly 0 (not round-off divided by eps).
void zscore_in_place(std::vector<double>& values, double eps, bool divide_by_std = true);

}  // namespace gtpo::rl
