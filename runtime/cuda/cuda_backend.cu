// The CUDA backend's lifetime, memory and configuration. Kernels live in the per-family files.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/cuda/cuda_common.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

namespace {
// A fixed cuBLAS workspace: with it (and no stream-dependent workspace growth) cuBLAS picks the same
// algorithm and reduction split on every call of a shape, which deterministic mode relies on.
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;
}  // namespace

int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error so later calls start clean
    return 0;
  }
  return count;
}

CudaBackend::CudaBackend(int device_index)
    : device_index_(device_index),
      kv_rows_(std::getenv("GTPO_CUDA_KV_ROWS") != nullptr &&
               std::string(std::getenv("GTPO_CUDA_KV_ROWS")) == "1"),
      allocator_(
          [device_index](size_t bytes) -> void* {
            void* ptr = nullptr;
            GTPO_CUDA_CHECK(cudaSetDevice(device_index));
            const cudaError_t status = cudaMalloc(&ptr, bytes);
            if (status != cudaSuccess) {
              cudaGetLastError();
              fail("CUDA out of memory: could not allocate ", bytes, " bytes on GPU ", device_index, " (",
                   cudaGetErrorString(status), ")");
            }
            return ptr;
          },
          [](void* ptr) { cudaFree(ptr); }) {
  GTPO_CUDA_CHECK(cudaSetDevice(device_index_));
  cudaStream_t stream = nullptr;
  GTPO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = stream;
  cublasHandle_t handle = nullptr;
  GTPO_CUBLAS_CHECK(cublasCreate(&handle));
  cublas_ = handle;
  GTPO_CUBLAS_CHECK(cublasSetStream(handle, stream));
  GTPO_CUDA_CHECK(cudaMalloc(&cublas_workspace_, kCublasWorkspaceBytes));
  GTPO_CUBLAS_CHECK(cublasSetWorkspace(handle, cublas_workspace_, kCublasWorkspaceBytes));
  configure(BackendOptions{});
}

CudaBackend::~CudaBackend() {
  // Process teardown may already have unloaded the driver; errors here are ignored on purpose.
  cudaStreamSynchronize(stream_of(*this));
  for (CUevent_st* e : free_events_) cudaEventDestroy(e);
  for (const PendingTiming& t : pending_timings_) {
    cudaEventDestroy(t.start);
    cudaEventDestroy(t.stop);
  }
  allocator_.release_cached();
  if (scratch_) cudaFree(scratch_);
  if (cublas_workspace_) cudaFree(cublas_workspace_);
  if (cublas_) cublasDestroy(cublas_of(*this));
  if (stream_) cudaStreamDestroy(stream_of(*this));
}

void CudaBackend::configure(const BackendOptions& options) {
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  if (options.matmul_precision == MatmulPrecision::tf32) mode = CUBLAS_TF32_TENSOR_OP_MATH;
  // Deterministic mode also forbids cuBLAS's reduced-precision split-K reductions.
  if (options.deterministic) mode = static_cast<cublasMath_t>(mode | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  GTPO_CUBLAS_CHECK(cublasSetMathMode(cublas_of(*this), mode));
  GTPO_CUBLAS_CHECK(cublasSetAtomicsMode(cublas_of(*this), options.deterministic ? CUBLAS_ATOMICS_NOT_ALLOWED
                                                                                 : CUBLAS_ATOMICS_ALLOWED));
  options_ = options;
}

void CudaBackend::synchronize() { GTPO_CUDA_CHECK(cudaStreamSynchronize(stream_of(*this))); }

void* CudaBackend::scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    if (scratch_) {
      GTPO_CUDA_CHECK(cudaStreamSynchronize(stream_of(*this)));  // the old buffer may still be in use
      GTPO_CUDA_CHECK(cudaFree(scratch_));
      scratch_ = nullptr;
    }
    GTPO_CUDA_CHECK(cudaMalloc(&scratch_, bytes));
    scratch_bytes_ = bytes;
  }
  return scratch_;
}

// ---- memory ------------------------------------------------------------------------------------
// Freed blocks go back to the cache at once. That is safe because all work runs on one stream: a later
// kernel that reuses the block is queued after every kernel that used it.
void* CudaBackend::allocate(size_t bytes) { return allocator_.allocate(bytes); }
void CudaBackend::deallocate(void* ptr, size_t bytes) { allocator_.deallocate(ptr, bytes); }

void CudaBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  GTPO_PRIMITIVE("copy_from_host");
  if (!bytes) return;
  // Synchronous on purpose: the host buffer may be a temporary that dies right after the call.
  GTPO_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_of(*this)));
  GTPO_CUDA_CHECK(cudaStreamSynchronize(stream_of(*this)));
}
void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  GTPO_PRIMITIVE("copy_to_host");
  if (!bytes) return;
  GTPO_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_of(*this)));
  GTPO_CUDA_CHECK(cudaStreamSynchronize(stream_of(*this)));
}
void* CudaBackend::allocate_host(size_t bytes) {
  void* p = nullptr;
  GTPO_CUDA_CHECK(cudaMallocHost(&p, std::max<size_t>(bytes, 1)));
  return p;
}
void CudaBackend::free_host(void* ptr) {
  if (ptr) cudaFreeHost(ptr);  // no check: called from destructors; a failure here leaks nothing we can reclaim
}
void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  GTPO_PRIMITIVE("copy");
  if (!bytes || dst == src) return;
  GTPO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_of(*this)));
}

namespace {
template <typename T>
__global__ void fill_kernel(T* dst, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = value;
}
}  // namespace

void CudaBackend::fill(float* dst, float value, int64_t n) {
  GTPO_PRIMITIVE("fill");
  if (n <= 0) return;
  GTPO_LAUNCH(fill_kernel, grid_for(n, 256), 256, 0, stream_of(*this), dst, value, n);
}
void CudaBackend::fill_i32(int32_t* dst, int32_t value, int64_t n) {
  GTPO_PRIMITIVE("fill_i32");
  if (n <= 0) return;
  GTPO_LAUNCH(fill_kernel, grid_for(n, 256), 256, 0, stream_of(*this), dst, value, n);
}

CudaBackend* cuda_backend_if_available() {
  static std::once_flag once;
  static std::unique_ptr<CudaBackend> backend;
  std::call_once(once, [] {
    if (std::getenv("GTPO_DISABLE_CUDA") == nullptr && visible_device_count() > 0)
      backend = std::make_unique<CudaBackend>(0);
  });
  return backend.get();
}

}  // namespace gtpo::cuda
