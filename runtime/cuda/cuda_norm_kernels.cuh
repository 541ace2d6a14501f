// Kernels of LayerNorm and RMSNorm and the launch shape of their column sums (design: cuda_norm.cu). Device
// code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of thread blocks.
#pragma once
#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/cuda/cuda_row_math.cuh"

namespace gtpo::cuda {

namespace {

using row_math::layer_norm_xhat;
using row_math::rms_norm_xhat;

// ---- weight / bias gradients ---------------------------------------------------------------------
constexpr int kColumnThreads = 256;
constexpr int64_t kMaxRowChunks = 64;   // enough blocks to fill a GPU for hidden sizes from ~512 up
constexpr int64_t kMinChunkRows = 16;   // and not so many that pass 2 does more work than pass 1

struct RowChunks {
  int64_t rows_per_chunk = 1, chunks = 0;
};
inline RowChunks row_chunks(int64_t rows) {
  RowChunks c;
  if (rows <= 0) return c;
  c.rows_per_chunk = (rows + kMaxRowChunks - 1) / kMaxRowChunks;
  if (c.rows_per_chunk < kMinChunkRows) c.rows_per_chunk = kMinChunkRows;
  c.chunks = (rows + c.rows_per_chunk - 1) / c.rows_per_chunk;
  return c;
}

// Blocks along the columns of pass 1 (its grid is this many by the chunk count) and of pass 2 (a grid-stride loop).
inline unsigned column_blocks(int64_t cols) {
  return static_cast<unsigned>((cols + kColumnThreads - 1) / kColumnThreads);
}

// partial_w[chunk, c] = sum_{r in chunk} gy[r, c] * xhat(r, c); partial_b[chunk, c] = sum gy[r, c] (when
// not null). mean == nullptr selects RMSNorm's xhat = x * rstd.
__global__ void norm_column_partials_kernel(const float* x, const float* mean, const float* rstd, const float* gy,
                                            double* partial_w, double* partial_b, int64_t rows, int64_t cols,
                                            int64_t rows_per_chunk) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= cols) return;  // no block-wide synchronisation below
  const int64_t chunk = blockIdx.y;
  const int64_t r_begin = chunk * rows_per_chunk;
  const int64_t r_end = r_begin + rows_per_chunk < rows ? r_begin + rows_per_chunk : rows;
  double acc_w = 0.0, acc_b = 0.0;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const int64_t i = r * cols + c;
    const float xhat = mean ? layer_norm_xhat(x[i], mean[r], rstd[r]) : rms_norm_xhat(x[i], rstd[r]);
    acc_w += static_cast<double>(ieee::mul(gy[i], xhat));
    acc_b += static_cast<double>(gy[i]);
  }
  partial_w[chunk * cols + c] = acc_w;
  if (partial_b) partial_b[chunk * cols + c] = acc_b;
}

// gweight[c] = sum_k partial_w[k, c] in chunk order (likewise gbias); with no chunks (rows == 0), zeros.
__global__ void norm_column_finish_kernel(const double* partial_w, const double* partial_b, float* gweight,
                                          float* gbias, int64_t chunks, int64_t cols) {
  for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    double w = 0.0, b = 0.0;
    for (int64_t k = 0; k < chunks; ++k) {
      w += partial_w[k * cols + c];
      if (gbias) b += partial_b[k * cols + c];
    }
    gweight[c] = static_cast<float>(w);
    if (gbias) gbias[c] = static_cast<float>(b);
  }
}

// ---- LayerNorm -----------------------------------------------------------------------------------
__global__ void layer_norm_forward_kernel(const float* x, const float* weight, const float* bias, float* y,
                                          float* mean, float* rstd, int64_t rows, int64_t cols, float eps) {
  GTPO_SHARED_ARRAY(double, shared, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    double sum = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += static_cast<double>(xr[c]);
    sum = block_sum(sum, shared);
    const double mu = cols > 0 ? sum / static_cast<double>(cols) : 0.0;
    double sq = 0.0;  // two-pass biased variance
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double d = static_cast<double>(xr[c]) - mu;
      sq += d * d;
    }
    sq = block_sum(sq, shared);
    const double var = cols > 0 ? sq / static_cast<double>(cols) : 0.0;
    const float m = static_cast<float>(mu);
    const float rs = row_math::norm_rstd(var, eps);
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
    // Each thread writes only the elements it read, after both sums: x == y is safe.
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      yr[c] = row_math::layer_norm_out(layer_norm_xhat(xr[c], m, rs), weight[c], bias ? bias[c] : 0.0f,
                                       bias != nullptr);
  }
}

// gx = rstd ((g - mean(g)) - xhat mean(g xhat)), g = gy * weight.
__global__ void layer_norm_backward_kernel(const float* x, const float* weight, const float* mean, const float* rstd,
                                           const float* gy, float* gx, int64_t rows, int64_t cols) {
  GTPO_SHARED_ARRAY(double, shared, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    const float* gr = gy + r * cols;
    float* out = gx + r * cols;
    const float m = mean[r], rs = rstd[r];
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = ieee::mul(gr[c], weight[c]);
      const float xhat = layer_norm_xhat(xr[c], m, rs);
      sum_g += static_cast<double>(g);
      sum_gx += static_cast<double>(g) * static_cast<double>(xhat);
    }
    sum_g = block_sum(sum_g, shared);
    sum_gx = block_sum(sum_gx, shared);
    const float a = static_cast<float>(sum_g / static_cast<double>(cols));
    const float b = static_cast<float>(sum_gx / static_cast<double>(cols));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = ieee::mul(gr[c], weight[c]);
      const float xhat = layer_norm_xhat(xr[c], m, rs);
      out[c] = row_math::layer_norm_grad(g, xhat, a, b, rs);
    }
  }
}

// ---- RMSNorm -------------------------------------------------------------------------------------
__global__ void rms_norm_forward_kernel(const float* x, const float* weight, float* y, float* rstd, int64_t rows,
                                        int64_t cols, float eps) {
  GTPO_SHARED_ARRAY(double, shared, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    double sq = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sq += static_cast<double>(xr[c]) * static_cast<double>(xr[c]);
    sq = block_sum(sq, shared);
    const double ms = cols > 0 ? sq / static_cast<double>(cols) : 0.0;
    const float rs = row_math::norm_rstd(ms, eps);
    if (threadIdx.x == 0) rstd[r] = rs;
    // Llama order: (x * rstd) * weight.
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = ieee::mul(rms_norm_xhat(xr[c], rs), weight[c]);
  }
}

// gx = rstd (g - xhat mean(g xhat)), g = gy * weight.
__global__ void rms_norm_backward_kernel(const float* x, const float* weight, const float* rstd, const float* gy,
                                         float* gx, int64_t rows, int64_t cols) {
  GTPO_SHARED_ARRAY(double, shared, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    const float* gr = gy + r * cols;
    float* out = gx + r * cols;
    const float rs = rstd[r];
    double sum_gx = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sum_gx += static_cast<double>(ieee::mul(gr[c], weight[c])) * static_cast<double>(rms_norm_xhat(xr[c], rs));
    sum_gx = block_sum(sum_gx, shared);
    const float b = static_cast<float>(sum_gx / static_cast<double>(cols));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float g = ieee::mul(gr[c], weight[c]);
      out[c] = row_math::rms_norm_grad(g, rms_norm_xhat(xr[c], rs), b, rs);
    }
  }
}

}  // namespace

}  // namespace gtpo::cuda
