// Deterministic test data: splitmix64-based, identical on every platform and standard library.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::testing {

class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  float uniform(float lo, float hi) { return lo + static_cast<float>(uniform()) * (hi - lo); }
  int32_t integer(int32_t lo, int32_t hi_exclusive) {
    return lo + static_cast<int32_t>(next() % static_cast<uint64_t>(hi_exclusive - lo));
  }

 private:
  uint64_t state_;
};

inline std::vector<float> random_values(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  TestRng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = rng.uniform(lo, hi);
  return v;
}

inline Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                            bool requires_grad = false) {
  Tensor t = Tensor::from_vector(random_values(shape.numel(), seed, lo, hi), shape);
  if (requires_grad) t.set_requires_grad(true);
  return t;
}

inline Tensor random_ids(const Shape& shape, uint64_t seed, int32_t vocab) {
  TestRng rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(shape.numel()));
  for (int32_t& id : ids) id = rng.integer(0, vocab);
  return Tensor::from_ints(ids, shape);
}

}  // namespace gtpo::testing
