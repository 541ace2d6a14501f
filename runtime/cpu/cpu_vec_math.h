// Branch-free float math that the compiler can vectorise without -ffast-math, for the CPU kernels' hot
// loops over a vocabulary. Every function is plain IEEE arithmetic in a fixed order, so a vectorised and
// a scalar evaluation give the same bits (the build uses -ffp-contract=off).
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "runtime/elementwise_math.h"
#include "runtime/exp_poly.h"

namespace gtpo::cpu_math {

// The shared core of both exps (and of the CUDA kernels' exp_any): runtime/exp_poly.h.
using fp::ExpParts;
using fp::exp_parts;

// e^x for x <= 88 (the kernels call it with x <= 0 up to rounding), Cephes expf: x = n ln2 + r with
// |r| <= ln2/2, e^r from a degree-7 polynomial, scaled by 2^n built in the exponent bits. Max relative
// error 1.4 ulp against exp in double over [-87, 0] (checked by a test). Results below e^-87 (~1.6e-38,
// the normal range's end) are flushed to 0; NaN in gives NaN out. glibc's expf is a scalar call, which
// made this loop ~4x slower.
inline float exp_bounded(float x) {
  // Keeps 2^n a normal number and n inside int32_t. Argument order matters: std::max(-87, NaN) is -87,
  // so a NaN x never reaches the float-to-int conversion (undefined behaviour for NaN); it is restored
  // below. Above 88.72 the result is +inf (beyond the contract, but defined).
  const float t = std::min(std::max(-87.0f, x), 88.72283f);
  const ExpParts e = exp_parts(t);
  const float scale = std::bit_cast<float>((static_cast<int32_t>(e.n) + 127) << 23);
  const float y = e.e_r * scale;
  return x < -87.0f ? 0.0f : (x == x ? y : x);
}

// e^x over the whole float range (sigmoid, silu, the token choice): one definition for both backends.
using elementwise::exp_any;

// Largest element of x[0, n) (-inf when n == 0). Sixteen independent lanes so the loop vectorises; max is
// exact, so the lane split cannot change the result. NaNs are skipped here; they reach the output
// through the exp pass instead.
inline float max_of(const float* x, int64_t n) {
  constexpr int kLanes = 16;
  float lane[kLanes];
  std::fill(lane, lane + kLanes, -std::numeric_limits<float>::infinity());
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int j = 0; j < kLanes; ++j) lane[j] = std::max(lane[j], x[k + j]);
  float m = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < kLanes; ++j) m = std::max(m, lane[j]);
  for (; k < n; ++k) m = std::max(m, x[k]);
  return m;
}

}  // namespace gtpo::cpu_math
