// Seeded random rollout batches for the property tests.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "rl/math/rollout.h"

namespace gtpo::rl::testing {

struct BatchShape {
  int groups = 4;
  int group_size = 8;
  int max_len = 24;
  bool equal_lengths = false;
  double zero_entropy_prob = 0.1;  // some exact-zero entropies, as greedy-like positions produce
};

inline std::vector<Response> random_batch(std::mt19937& rng, const BatchShape& s) {
  std::uniform_int_distribution<int> len(0, s.max_len);
  std::uniform_real_distribution<float> ent(0.0f, 3.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Response> batch;
  for (int g = 0; g < s.groups; ++g) {
    const int common = len(rng);
    for (int k = 0; k < s.group_size; ++k) {
      Response r;
      r.group = std::string("g").append(std::to_string(g));
      r.correct = u(rng) < 0.5;
      const int n = s.equal_lengths ? common : len(rng);
      for (int t = 0; t < n; ++t) r.entropies.push_back(u(rng) < s.zero_entropy_prob ? 0.0f : ent(rng));
      batch.push_back(r);
    }
  }
  return batch;
}

}  // namespace gtpo::rl::testing
