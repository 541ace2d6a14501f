// The device side of cuda_common.cuh: launch-size helpers and the fixed-order (hence deterministic) warp and
// block reductions, plus the macros kernels declare shared memory with. No CUDA runtime API and no CUDA
// header: a host program that supplies threadIdx, blockIdx, blockDim, gridDim, __syncthreads and
// __shfl_xor_sync (tests/cuda_emulated/emu.h) runs the kernel headers built on this one.
#pragma once
#include <cmath>
#include <cstdint>

// A block's shared array and the dynamic shared memory of a launch. A host emulation, where one kernel body
// runs as many fibers, defines these before including any kernel header so that they name per-block storage.
#ifndef GTPO_SHARED_ARRAY
#define GTPO_SHARED_ARRAY(type, name, count) __shared__ type name[count]
#endif
#ifndef GTPO_DYNAMIC_SHARED
#define GTPO_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif

namespace gtpo::cuda {

constexpr int kWarp = 32;

// Blocks for an elementwise launch of n items at `threads` per block, capped so that grid-stride loops
// cover the rest (the cap keeps the grid valid for any n).
inline unsigned grid_for(int64_t n, int threads, int64_t cap = 65535LL * 32) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > cap) blocks = cap;
  return static_cast<unsigned>(blocks);
}

// Sum over a warp; every lane gets the result. The butterfly order is fixed, so the result is too.
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets the result.
// `shared` needs 32 slots. Calls must be reached by every thread of the block.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + kWarp - 1) / kWarp;
  T total = lane < warps ? shared[lane] : T(0);
  return warp_sum(total);
}

__device__ __forceinline__ float block_max(float v, float* shared) {
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + kWarp - 1) / kWarp;
  float m = lane < warps ? shared[lane] : -INFINITY;
  return warp_max(m);
}

}  // namespace gtpo::cuda
