// The CPU backend: its own GEMM kernel (cpu_gemm.cpp; Eigen for large products), OpenMP (through
// parallel_for) for everything else.
// Each primitive family lives in its own file (cpu_gemm.cpp, cpu_elementwise.cpp, ...).
#pragma once
#include "runtime/backend.h"
#include "runtime/caching_allocator.h"

namespace gtpo {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  Device device() const override { return Device::cpu; }
  const char* name() const override { return "cpu"; }
  // fp32 only: tf32 and bf16 are GPU speed modes and throw. deterministic=false is accepted and changes
  // nothing (every CPU primitive is deterministic).
  void configure(const BackendOptions& options) override;

  void* allocate(size_t bytes) override;
  void deallocate(void* ptr, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void fill(float* dst, float value, int64_t n) override;
  void fill_i32(int32_t* dst, int32_t value, int64_t n) override;
  AllocatorStats allocator_stats() const { return allocator_.stats(); }
  void reset_allocator_peak() { allocator_.reset_peak(); }

  void gemm(const GemmArgs& args) override;
  int64_t gemm_b_panel_width(int64_t k, int64_t n) const override;

  void unary(UnaryOp op, const float* x, float* y, int64_t n, float scalar) override;
  void unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                      float scalar) override;
  void binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) override;
  void swiglu_forward(const float* gate, const float* up, float* out, int64_t n) override;
  void swiglu_backward(const float* gate, const float* up, const float* gout, float* ggate, float* gup,
                       int64_t n) override;

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

  bool supports(Capability c) const override {
    return c == Capability::attention_prefix || c == Capability::fused_swiglu ||
           c == Capability::attention_query_range || c == Capability::attention_kv_rows;
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

 private:
  CachingAllocator allocator_;
};

CpuBackend& cpu_backend();

}  // namespace gtpo
