// Helpers for bitwise-determinism tests: run a computation with 1 and 2 OpenMP threads, compare floats
// bit for bit.
#pragma once
#include <omp.h>

#include <cstring>
#include <utility>
#include <vector>

namespace gtpo::testing {

// Runs f with 1 and then 2 OpenMP threads (restoring the setting) and returns both results.
template <typename F>
auto with_1_and_2_threads(F&& f) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  auto one = f();
  omp_set_num_threads(2);
  auto two = f();
  omp_set_num_threads(saved);
  return std::make_pair(one, two);
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace gtpo::testing
