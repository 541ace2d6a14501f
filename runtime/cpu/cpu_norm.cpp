// LayerNorm and RMSNorm over the last dim.
//
// Row statistics use double accumulators in index order, one row per thread. Weight and bias gradients
// are column sums over rows: each column is summed by one thread in row order, so the result does not
// depend on the thread count. mean and rstd are stored as float and the backward uses exactly those
// values, so forward and backward agree on xhat.
#include <algorithm>
#include <cmath>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {

constexpr int64_t kColumnBlock = 64;

// Column chunks for the weight-gradient pass: wide enough that small problems run in one chunk, and at
// least a cache line of each row. Narrower than kColumnBlock, a hidden size of 64 over thousands of rows
// (the quick start's update) is spread over the threads instead of summed by one (each column's sum is the
// same chain either way).
constexpr int64_t kMinColumnChunk = 16;
int64_t column_grain(int64_t rows) { return std::max<int64_t>(kMinColumnChunk, grain_for(rows * 2)); }

// gweight[c] = sum_r gy[r, c] * xhat(r, c) and (kBias) gbias[c] = sum_r gy[r, c], rows in order.
template <bool kBias, typename Xhat>
void column_sums(const float* gy, float* gweight, float* gbias, int64_t rows, int64_t cols, Xhat xhat) {
  parallel_for(cols, column_grain(rows), [&](int64_t cb, int64_t ce) {
    double acc_w[kColumnBlock], acc_b[kColumnBlock];
    for (int64_t b0 = cb; b0 < ce; b0 += kColumnBlock) {
      const int64_t n = std::min(kColumnBlock, ce - b0);
      for (int64_t j = 0; j < n; ++j) acc_w[j] = acc_b[j] = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        const float* g = gy + r * cols + b0;
        for (int64_t j = 0; j < n; ++j) {
          acc_w[j] += static_cast<double>(g[j] * xhat(r, b0 + j));
          if constexpr (kBias) acc_b[j] += static_cast<double>(g[j]);
        }
      }
      for (int64_t j = 0; j < n; ++j) {
        gweight[b0 + j] = static_cast<float>(acc_w[j]);
        if constexpr (kBias) gbias[b0 + j] = static_cast<float>(acc_b[j]);
      }
    }
  });
}

// RMSNorm's row statistics go kRowsTogether rows at a time: each row's is still one chain of double
// additions over its columns in order (the same bits), and eight independent chains keep the adder busy
// where one row at a time waited on every addition's latency (a hidden-64 model's rows are 64 additions).
constexpr int64_t kRowsTogether = 8;

// sums[k] = the sum over c in order of term(r + k, c), for k < count <= kRowsTogether.
template <typename Term>
void row_sums(int64_t r, int64_t count, int64_t cols, double* sums, Term term) {
  for (int64_t k = 0; k < count; ++k) sums[k] = 0.0;
  if (count == kRowsTogether) {
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t k = 0; k < kRowsTogether; ++k) sums[k] += term(r + k, c);
  } else {
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t k = 0; k < count; ++k) sums[k] += term(r + k, c);
  }
}

}  // namespace

void CpuBackend::layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, float* mean,
                                    float* rstd, int64_t rows, int64_t cols, float eps) {
  GTPO_PRIMITIVE("layer_norm_forward");
  parallel_for(rows, grain_for(cols * 4), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      double sum = 0.0;
      for (int64_t c = 0; c < cols; ++c) sum += static_cast<double>(xr[c]);
      const double mu = cols > 0 ? sum / static_cast<double>(cols) : 0.0;
      double sq = 0.0;  // two-pass biased variance
      for (int64_t c = 0; c < cols; ++c) {
        const double d = static_cast<double>(xr[c]) - mu;
        sq += d * d;
      }
      const double var = cols > 0 ? sq / static_cast<double>(cols) : 0.0;
      const float m = static_cast<float>(mu);
      const float rs = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
      mean[r] = m;
      rstd[r] = rs;
      if (bias)
        for (int64_t c = 0; c < cols; ++c) yr[c] = ((xr[c] - m) * rs) * weight[c] + bias[c];
      else
        for (int64_t c = 0; c < cols; ++c) yr[c] = ((xr[c] - m) * rs) * weight[c];
    }
  });
}

void CpuBackend::layer_norm_backward(const float* x, const float* weight, const float* mean, const float* rstd,
                                     const float* gy, float* gx, float* gweight, float* gbias, int64_t rows,
                                     int64_t cols) {
  GTPO_PRIMITIVE("layer_norm_backward");
  // With xhat = (x - mean) * rstd and g = gy * weight:
  //   gx = rstd * (g - mean(g) - xhat * mean(g * xhat))
  parallel_for(rows, grain_for(cols * 6), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* xr = x + r * cols;
      const float* gr = gy + r * cols;
      float* out = gx + r * cols;
      const float m = mean[r], rs = rstd[r];
      double sum_g = 0.0, sum_gx = 0.0;
      for (int64_t c = 0; c < cols; ++c) {
        const float g = gr[c] * weight[c];
        const float xhat = (xr[c] - m) * rs;
        sum_g += static_cast<double>(g);
        sum_gx += static_cast<double>(g) * static_cast<double>(xhat);
      }
      const float a = static_cast<float>(sum_g / static_cast<double>(cols));
      const float b = static_cast<float>(sum_gx / static_cast<double>(cols));
      for (int64_t c = 0; c < cols; ++c) {
        const float g = gr[c] * weight[c];
        const float xhat = (xr[c] - m) * rs;
        out[c] = rs * ((g - a) - xhat * b);
      }
    }
  });
  auto xhat = [&](int64_t r, int64_t c) { return (x[r * cols + c] - mean[r]) * rstd[r]; };
  if (gbias)
    column_sums<true>(gy, gweight, gbias, rows, cols, xhat);
  else
    column_sums<false>(gy, gweight, nullptr, rows, cols, xhat);
}

void CpuBackend::rms_norm_forward(const float* x, const float* weight, float* y, float* rstd, int64_t rows,
                                  int64_t cols, float eps) {
  GTPO_PRIMITIVE("rms_norm_forward");
  parallel_for(rows, grain_for(cols * 3), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; r += kRowsTogether) {
      const int64_t count = std::min(kRowsTogether, re - r);
      double sq[kRowsTogether];
      row_sums(r, count, cols, sq, [&](int64_t row, int64_t c) {
        return static_cast<double>(x[row * cols + c]) * static_cast<double>(x[row * cols + c]);
      });
      for (int64_t k = 0; k < count; ++k) {
        const float* xr = x + (r + k) * cols;
        float* yr = y + (r + k) * cols;
        const double ms = cols > 0 ? sq[k] / static_cast<double>(cols) : 0.0;
        const float rs = static_cast<float>(1.0 / std::sqrt(ms + static_cast<double>(eps)));
        rstd[r + k] = rs;
        // Llama order: (x * rstd) * weight.
        for (int64_t c = 0; c < cols; ++c) yr[c] = (xr[c] * rs) * weight[c];
      }
    }
  });
}

void CpuBackend::rms_norm_backward(const float* x, const float* weight, const float* rstd, const float* gy, float* gx,
                                   float* gweight, int64_t rows, int64_t cols) {
  GTPO_PRIMITIVE("rms_norm_backward");
  // With xhat = x * rstd and g = gy * weight: gx = rstd * (g - xhat * mean(g * xhat)).
  parallel_for(rows, grain_for(cols * 5), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; r += kRowsTogether) {
      const int64_t count = std::min(kRowsTogether, re - r);
      double sum_gx[kRowsTogether];
      row_sums(r, count, cols, sum_gx, [&](int64_t row, int64_t c) {
        return static_cast<double>(gy[row * cols + c] * weight[c]) * static_cast<double>(x[row * cols + c] * rstd[row]);
      });
      for (int64_t k = 0; k < count; ++k) {
        const float* xr = x + (r + k) * cols;
        const float* gr = gy + (r + k) * cols;
        float* out = gx + (r + k) * cols;
        const float rs = rstd[r + k];
        const float b = static_cast<float>(sum_gx[k] / static_cast<double>(cols));
        for (int64_t c = 0; c < cols; ++c) {
          const float g = gr[c] * weight[c];
          const float xhat = xr[c] * rs;
          out[c] = rs * (g - xhat * b);
        }
      }
    }
  });
  column_sums<false>(gy, gweight, nullptr, rows, cols,
                     [&](int64_t r, int64_t c) { return x[r * cols + c] * rstd[r]; });
}

}  // namespace gtpo
