// Row-wise softmax and log-softmax over the last dim.
//
// Each row is handled by one thread, in index order, with double accumulators: results do not depend on
// the thread count.
#include <cmath>
#include <limits>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

void CpuBackend::softmax_forward(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax) {
  GTPO_PRIMITIVE("softmax_forward");
  if (cols <= 0) return;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  parallel_for(rows, grain_for(cols * 8), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      float mx = kNegInf;
      for (int64_t c = 0; c < cols; ++c) mx = xr[c] > mx ? xr[c] : mx;
      if (mx == kNegInf) {
        // All -inf: no mass anywhere. Zeros (softmax) / -inf (log_softmax) instead of 0/0. (A NaN row
        // falls through below and stays NaN.)
        bool any_nan = false;
        for (int64_t c = 0; c < cols; ++c) any_nan = any_nan || std::isnan(xr[c]);
        if (!any_nan) {
          for (int64_t c = 0; c < cols; ++c) yr[c] = log_softmax ? kNegInf : 0.0f;
          continue;
        }
      }
      double sum = 0.0;
      if (log_softmax) {
        for (int64_t c = 0; c < cols; ++c) sum += static_cast<double>(std::exp(xr[c] - mx));
        const float log_sum = static_cast<float>(std::log(sum));
        for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] - mx) - log_sum;
      } else {
        for (int64_t c = 0; c < cols; ++c) {
          const float e = std::exp(xr[c] - mx);
          yr[c] = e;
          sum += static_cast<double>(e);
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t c = 0; c < cols; ++c) yr[c] *= inv;
      }
    }
  });
}

void CpuBackend::softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols,
                                  bool log_softmax) {
  GTPO_PRIMITIVE("softmax_backward");
  if (cols <= 0) return;
  parallel_for(rows, grain_for(cols * 4), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* yr = y + r * cols;
      const float* gr = gy + r * cols;
      float* out = gx + r * cols;
      double acc = 0.0;
      if (log_softmax) {
        // gx = gy - exp(y) * sum(gy)
        for (int64_t c = 0; c < cols; ++c) acc += static_cast<double>(gr[c]);
        const float s = static_cast<float>(acc);
        for (int64_t c = 0; c < cols; ++c) out[c] = gr[c] - std::exp(yr[c]) * s;
      } else {
        // gx = y * (gy - sum(gy * y))
        for (int64_t c = 0; c < cols; ++c) acc += static_cast<double>(gr[c]) * static_cast<double>(yr[c]);
        const float dot = static_cast<float>(acc);
        for (int64_t c = 0; c < cols; ++c) out[c] = yr[c] * (gr[c] - dot);
      }
    }
  });
}

}  // namespace gtpo
