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
  AllocatorStats allocator_stats() const { return allocator_.stats(); }
  void reset_allocator_peak() { allocator_.reset_peak(); }

#define GTPO_BACKEND_PRIMITIVE(ret, name, params) ret name params override;
#include "runtime/backend_primitives.h"
#undef GTPO_BACKEND_PRIMITIVE

  int64_t gemm_b_panel_width(int64_t k, int64_t n) const override;
  void swiglu_forward(const float* gate, const float* up, float* out, int64_t n) override;
  void swiglu_backward(const float* gate, const float* up, const float* gout, float* ggate, float* gup,
                       int64_t n) override;
  bool supports(Capability c) const override {
    return c == Capability::fused_swiglu || c == Capability::attention_query_range ||
           c == Capability::attention_kv_rows;
  }

 private:
  CachingAllocator allocator_;
};

CpuBackend& cpu_backend();

}  // namespace gtpo
