// Shared by the CUDA kernel files: error checks that name the failing call and the backend's stream and cuBLAS
// handle; the device-side helpers (launch sizes, warp and block reductions) are in cuda_kernel_common.cuh.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/cuda_kernel_common.cuh"
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

// KERNEL<<<GRID, BLOCK, SMEM, STREAM>>>(...) and its check: every kernel of the backend starts here. Launch
// errors surface at the launch; execution errors surface at the next synchronising call.
#define GTPO_LAUNCH(kernel, grid, block, smem, stream, ...)     \
  do {                                                          \
    kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__); \
    GTPO_CUDA_CHECK(cudaGetLastError());                        \
  } while (0)

inline cudaStream_t stream_of(const CudaBackend& be) { return reinterpret_cast<cudaStream_t>(be.stream()); }
inline cublasHandle_t cublas_of(const CudaBackend& be) { return reinterpret_cast<cublasHandle_t>(be.cublas()); }

}  // namespace gtpo::cuda
