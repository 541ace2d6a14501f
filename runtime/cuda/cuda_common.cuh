// Shared by the CUDA kernel files: error checks that name the failing call, launch-size helpers and
// fixed-order (hence deterministic) warp and block reductions.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/error.h"

namespace gtpo::cuda {

#define GTPO_CUDA_CHECK(call)                                                                         \
  do {                                                                                                \
    const cudaError_t gtpo_cuda_status = (call);                                                      \
    if (gtpo_cuda_status != cudaSuccess)                                                              \
      ::gtpo::fail("CUDA error in ", #call, " (", __FILE__, ":", __LINE__, "): ",                     \
                   cudaGetErrorString(gtpo_cuda_status));                                             \
  } while (0)

#define GTPO_CUBLAS_CHECK(call)                                                                       \
  do {                                                                                                \
    const cublasStatus_t gtpo_cublas_status = (call);                                                 \
    if (gtpo_cublas_status != CUBLAS_STATUS_SUCCESS)                                                  \
      ::gtpo::fail("cuBLAS error in ", #call, " (", __FILE__, ":", __LINE__, "): ",                   \
                   cublasGetStatusString(gtpo_cublas_status));                                        \
  } while (0)

// Launch errors surface at the launch; execution errors surface at the next synchronising call.
#define GTPO_CUDA_CHECK_LAUNCH() GTPO_CUDA_CHECK(cudaGetLastError())

inline cudaStream_t stream_of(const CudaBackend& be) { return reinterpret_cast<cudaStream_t>(be.stream()); }
inline cublasHandle_t cublas_of(const CudaBackend& be) { return reinterpret_cast<cublasHandle_t>(be.cublas()); }

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
