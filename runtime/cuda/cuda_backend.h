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

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void* allocate_host(size_t bytes) override;  // page-locked (cudaMallocHost)
  void free_host(void* ptr) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill(float* dst, float value, int64_t n) override;
  void fill_i32(int32_t* dst, int32_t value, int64_t n) override;

  void gemm(const GemmArgs& args) override;

  void unary(UnaryOp op, const float* x, float* y, int64_t n, float scalar) override;
  void unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                      float scalar) override;
  void binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) override;

  void reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) override;
  void expand_axis(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) override;
  void copy_2d(void* dst, int64_t dst_row_stride, const void* src, int64_t src_row_stride, int64_t rows,
               int64_t cols, size_t elem_size) override;
  void permute(const float* x, float* out, const std::vector<int64_t>& shape,
               const std::vector<int64_t>& perm) override;
  void sum_squares_each(const std::vector<const float*>& xs, const std::vector<int64_t>& ns,
                        double* out) override;

  void softmax_forward(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax) override;
  void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols,
                        bool log_softmax) override;
  void layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, float* mean, float* rstd,
                          int64_t rows, int64_t cols, float eps) override;
  void layer_norm_backward(const float* x, const float* weight, const float* mean, const float* rstd, const float* gy,
                           float* gx, float* gweight, float* gbias, int64_t rows, int64_t cols) override;
  void rms_norm_forward(const float* x, const float* weight, float* y, float* rstd, int64_t rows, int64_t cols,
                        float eps) override;
  void rms_norm_backward(const float* x, const float* weight, const float* rstd, const float* gy, float* gx,
                         float* gweight, int64_t rows, int64_t cols) override;

  void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t n, int64_t dim) override;
  void embedding_backward(const int32_t* ids, const float* gy, float* gtable, int64_t n, int64_t dim,
                          int64_t vocab) override;
  void rope(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads, int64_t head_dim,
            const RopeFrequencies& freq, bool inverse) override;

  // attention_kv_rows (finished rows leave the sampler's decode batch) only with GTPO_CUDA_KV_ROWS=1 until a
  // GPU has run it: the decode kernel honours AttentionArgs::kv_rows (emulated bit for bit here).
  bool supports(Capability c) const override {
    return c == Capability::attention_prefix || (c == Capability::attention_kv_rows && kv_rows_);
  }
  void attention_forward(const AttentionArgs& args, const float* q, const float* k, const float* v, float* out,
                         float* lse) override;
  void attention_backward(const AttentionArgs& args, const float* q, const float* k, const float* v,
                          const float* out, const float* lse, const float* gout, float* gq, float* gk,
                          float* gv) override;

  void cross_entropy_forward(const float* logits, const int32_t* targets, float* loss, float* lse, int64_t rows,
                             int64_t vocab, int32_t ignore_index) override;
  void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse, const float* grow,
                              float* glogits, int64_t rows, int64_t vocab, int32_t ignore_index) override;
  void logprob_entropy_forward(const float* logits, const int32_t* targets, float* logprob, float* entropy,
                               float* lse, int64_t rows, int64_t vocab, float inv_temperature) override;
  void logprob_entropy_backward(const float* logits, const int32_t* targets, const float* lse, const float* entropy,
                                const float* glogprob, const float* gentropy, float* glogits, int64_t rows,
                                int64_t vocab, float inv_temperature) override;
  void choose_tokens(const float* logits, const double* uniforms, int32_t* ids, int64_t rows, int64_t vocab,
                     const TokenChoiceArgs& args) override;

  void adamw_step(float* param, const float* grad, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                  float eps, float weight_decay, float bias_correction1, float bias_correction2) override;

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
