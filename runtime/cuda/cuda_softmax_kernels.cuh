// Kernels of the row-wise softmax and log-softmax (design: cuda_softmax.cu). Device code only, no CUDA runtime
// API: tests/cuda_emulated runs these very kernels on a host emulation of thread blocks.
#pragma once
#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/cuda/cuda_row_math.cuh"

namespace gtpo::cuda {

namespace {

__global__ void softmax_forward_kernel(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax) {
  GTPO_SHARED_ARRAY(float, shared_f, kWarp);
  GTPO_SHARED_ARRAY(double, shared_d, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    // fmaxf skips NaN, like the CPU's `x > mx ? x : mx`: a NaN reaches the output through the sum.
    float mx = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) mx = fmaxf(mx, xr[c]);
    mx = block_max(mx, shared_f);
    if (mx == -INFINITY) {
      // All -inf: no mass anywhere. Zeros (softmax) / -inf (log_softmax) instead of 0/0, unless a NaN is
      // there, which then falls through and makes the row NaN as on the CPU.
      float nans = 0.0f;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) nans += isnan(xr[c]) ? 1.0f : 0.0f;
      nans = block_sum(nans, shared_f);
      if (nans == 0.0f) {
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = log_softmax ? -INFINITY : 0.0f;
        continue;  // uniform across the block: mx and nans are block-wide values
      }
    }
    double sum = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += static_cast<double>(expf(ieee::sub(xr[c], mx)));
    sum = block_sum(sum, shared_d);
    // Each thread writes only the elements it read, after the block-wide sum: x == y is safe.
    if (log_softmax) {
      const float log_sum = static_cast<float>(log(sum));
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = ieee::sub(ieee::sub(xr[c], mx), log_sum);
    } else {
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = ieee::mul(expf(ieee::sub(xr[c], mx)), inv);
    }
  }
}

__global__ void softmax_backward_kernel(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols,
                                        bool log_softmax) {
  GTPO_SHARED_ARRAY(double, shared_d, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* yr = y + r * cols;
    const float* gr = gy + r * cols;
    float* out = gx + r * cols;
    // log_softmax: s = sum gy; softmax: s = sum gy * y.
    double acc = 0.0;
    if (log_softmax) {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc += static_cast<double>(gr[c]);
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        acc += static_cast<double>(gr[c]) * static_cast<double>(yr[c]);
    }
    const float s = static_cast<float>(block_sum(acc, shared_d));
    if (log_softmax) {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row_math::log_softmax_grad(yr[c], gr[c], s);
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row_math::softmax_grad(yr[c], gr[c], s);
    }
  }
}

}  // namespace

}  // namespace gtpo::cuda
