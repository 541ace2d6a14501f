// The CUDA backend: cuBLAS for GEMM, our own kernels for everything else, all queued on one stream.
//
// This header is plain C++ (no CUDA syntax) so that host code can name the class; the kernels live in
// per-family .cu files (cuda_gemm.cu, cuda_elementwise.cu, ...), like the CPU backend's. Every kernel that
// reduces does so in a fixed order (warp shuffles in a fixed tree, no atomics), so results do not depend on
// scheduling: deterministic mode only has to pin cuBLAS.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/backend.h"
#include "runtime/caching_allocator.h"

// Opaque CUDA handle types, so that including this header needs no CUDA headers.
struct CUstream_st;
struct cublasContext;
struct CUevent_st;

namespace gtpo::cuda {

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device_index);
  ~CudaBackend() override;
  Device device() const override { return Device::cuda; }
  const char* name() const override { return "cuda"; }
  void configure(const BackendOptions& options) override;
  void synchronize() override;
  AllocatorStats allocator_stats() const { return allocator_.stats(); }

  void* allocate_host(size_t bytes) override;  // page-locked (cudaMallocHost)
  void free_host(void* ptr) override;

#define GTPO_BACKEND_PRIMITIVE(ret, name, params) ret name params override;
#include "runtime/backend_primitives.h"
#undef GTPO_BACKEND_PRIMITIVE

  // attention_kv_rows (finished rows leave the sampler's decode batch) only with GTPO_CUDA_KV_ROWS=1 until a
  // GPU has run it: the decode kernel honours AttentionArgs::kv_rows (emulated bit for bit here).
  bool supports(Capability c) const override { return c == Capability::attention_kv_rows && kv_rows_; }

  // ---- shared with the per-family .cu files ----------------------------------------------------
  CUstream_st* stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }
  int device_index() const { return device_index_; }
  // Device scratch valid until the next call to scratch(): one primitive at a time uses it, and the
  // single stream orders the reuse. Grows, never shrinks.
  void* scratch(size_t bytes);

 protected:
  // Per-primitive timing by CUDA events (cuda_profile.cpp): a pair per call, resolved in batches.
  void start_timing(const char* name) override;
  void stop_timing() override;
  void flush_timings() override;

 private:
  struct PendingTiming {
    const char* name;
    CUevent_st* start;
    CUevent_st* stop;
  };
  CUevent_st* take_event();
  std::vector<CUevent_st*> free_events_;
  std::vector<PendingTiming> pending_timings_;
  const char* timing_name_ = nullptr;
  CUevent_st* timing_start_ = nullptr;

  int device_index_ = 0;
  bool kv_rows_ = false;  // GTPO_CUDA_KV_ROWS=1
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  CachingAllocator allocator_;
};

// Number of visible CUDA devices; 0 when the driver or a device is missing (never throws).
int visible_device_count();

// The process-wide CUDA backend for device 0, created on first use; null when no GPU is visible.
CudaBackend* cuda_backend_if_available();

}  // namespace gtpo::cuda
