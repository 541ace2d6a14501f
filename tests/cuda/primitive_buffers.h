// Device buffers for the primitive-level parity tests (test_cuda_primitives.cpp, test_cuda_attention.cpp):
// random host values uploaded to a device, and NaN-filled outputs.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"
#include "tests/support/random.h"

namespace gtpo::testing {

inline Tensor up(const std::vector<float>& v, Device d) {
  return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}, d);
}
inline Tensor up_ints(const std::vector<int32_t>& v, Device d) {
  return Tensor::from_ints(v, Shape{static_cast<int64_t>(v.size())}, d);
}
// An output buffer pre-filled with NaN: an element a primitive forgets to write cannot pass.
inline Tensor out_buffer(int64_t n, Device d) { return Tensor::full(Shape{n}, NAN, d); }

inline std::vector<float> values(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  return random_values(n, seed, lo, hi);
}

}  // namespace gtpo::testing
