// The RoPE kernel and its shared-memory size (design: cuda_rope.cu).
// Device code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of
// thread blocks.
#pragma once
#include <cstddef>

#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/cuda/cuda_row_math.cuh"
#include "runtime/rope_frequencies.h"

namespace gtpo::cuda {

namespace {

constexpr int kRopeThreads = 128;
constexpr int64_t kMaxRopeHalf = 4096;  // the cos/sin table (2 * half floats) must fit in 48 KiB of shared memory

// Dynamic shared memory of rope_kernel: the cos/sin table of one row.
inline size_t rope_shared_bytes(int64_t half) { return static_cast<size_t>(2 * half) * sizeof(float); }

__global__ void rope_kernel(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                            int64_t head_dim, RopeFrequencies freq, bool inverse) {
  GTPO_DYNAMIC_SHARED(float, table);  // cos in [0, half), signed sin in [half, 2 half)
  const int64_t half = head_dim / 2;
  float* cs = table;
  float* sn = table + half;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    __syncthreads();  // the previous row's table is no longer read
    const int32_t pos = positions[r];
    for (int64_t d = threadIdx.x; d < half; d += blockDim.x)
      row_math::rope_cos_sin(pos, rope_scaled_inv_freq(row_math::rope_inv_freq(d, head_dim, freq.theta), freq),
                             inverse, &cs[d], &sn[d]);
    __syncthreads();
    // Each thread reads both elements of a pair before writing them: x == out is safe.
    const int64_t pairs = heads * half;
    for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
      const int64_t h = i / half;
      const int64_t d = i - h * half;
      const int64_t base = (r * heads + h) * head_dim;
      float lo, hi;
      row_math::rope_rotate(x[base + d], x[base + d + half], cs[d], sn[d], &lo, &hi);
      out[base + d] = lo;
      out[base + d + half] = hi;
    }
  }
}

}  // namespace

}  // namespace gtpo::cuda
