// Kernels of the reductions, broadcasts, strided copies, permutes and sum of squares (design: cuda_layout.cu).
// Device code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of
// thread blocks.
#pragma once
#include "runtime/cuda/cuda_index_math.cuh"
#include "runtime/cuda/cuda_kernel_common.cuh"

namespace gtpo::cuda {

namespace {
constexpr int kLayoutThreads = 256;

// out[o, i] = scale * sum_l x[o, l, i]. Threads of a warp take neighbouring i, so for inner > 1 each step
// over l reads a contiguous run.
__global__ void reduce_sum_kernel(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                                  float scale) {
  const int64_t n = outer * inner;
  for (int64_t j = first_index(); j < n; j += index_step()) out[j] = reduce_sum_at(x, len, inner, scale, j);
}

// A tall reduction (few outputs, many chunks) in two passes with reduce_sum_kernel's bits:
// partials[c, j] = chunk c of output j (grid: output blocks x chunks), then each output adds its chunks in
// order.
__global__ void reduce_sum_chunks_kernel(const float* x, float* partials, int64_t n, int64_t len,
                                         int64_t inner) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;  // no block-wide synchronisation here
  partials[blockIdx.y * n + j] = reduce_chunk_sum(x, len, inner, j, blockIdx.y);
}
__global__ void reduce_sum_finish_kernel(const float* partials, float* out, int64_t n, int64_t chunks,
                                         float scale) {
  for (int64_t j = first_index(); j < n; j += index_step())
    out[j] = reduce_total(chunks, scale, [&](int64_t c) { return partials[c * n + j]; });
}
// Two passes where one thread per output would leave most of the GPU idle; the grid's y holds the chunks.
inline bool reduce_sum_in_two_passes(int64_t n, int64_t len) {
  const int64_t chunks = reduce_chunks(len);
  return chunks >= 4 && n < 65536 && chunks <= 65535;
}

// out[o, l, i] = scale * x[o, i]
__global__ void expand_axis_kernel(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                                   float scale) {
  const int64_t n = outer * len * inner;
  for (int64_t j = first_index(); j < n; j += index_step())
    out[j] = ieee::mul(scale, x[expand_axis_source(len, inner, j)]);
}

// The copy_2d cases cudaMemcpy2DAsync refuses (a pitch below the row width, or above its limit).
__global__ void copy_2d_kernel(char* dst, int64_t dst_pitch, const char* src, int64_t src_pitch, int64_t rows,
                               int64_t width) {
  const int64_t n = rows * width;
  for (int64_t j = first_index(); j < n; j += index_step()) {
    const int64_t r = j / width;
    const int64_t c = j - r * width;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

__global__ void permute_kernel(const float* x, float* out, PermutePlan plan) {
  for (int64_t j = first_index(); j < plan.numel; j += index_step()) out[j] = x[permute_source(plan, j)];
}

// Pass 1: block b writes the sum of squares of its chunk. Thread t takes elements t, t + 256, ... of the
// chunk (coalesced), then the block tree combines the 256 partial sums; both orders depend on n only.
__global__ void sum_squares_partials_kernel(const float* x, int64_t n, int64_t chunk, double* partials) {
  GTPO_SHARED_ARRAY(double, shared, 32);
  const int64_t begin = blockIdx.x * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  double acc = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = x[i];
    acc += v * v;  // exact product in double, so fusing it into an FMA would not change the sum
  }
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Pass 2: one block adds the partials, strided over its threads, then through the same tree.
__global__ void sum_squares_final_kernel(const double* partials, int64_t count, double* result) {
  GTPO_SHARED_ARRAY(double, shared, 32);
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) *result = total;
}
}  // namespace

}  // namespace gtpo::cuda
