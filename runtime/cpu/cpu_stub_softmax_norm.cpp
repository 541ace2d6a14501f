// Placeholder until this primitive family is implemented: every call fails loudly, never silently.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

void CpuBackend::softmax_forward(const float*, float*, int64_t, int64_t, bool) { fail("softmax: not implemented on cpu"); }
void CpuBackend::softmax_backward(const float*, const float*, float*, int64_t, int64_t, bool) { fail("softmax: not implemented on cpu"); }
void CpuBackend::layer_norm_forward(const float*, const float*, const float*, float*, float*, float*, int64_t, int64_t, float) { fail("layer_norm: not implemented on cpu"); }
void CpuBackend::layer_norm_backward(const float*, const float*, const float*, const float*, const float*, float*, float*, float*, int64_t, int64_t) { fail("layer_norm: not implemented on cpu"); }
void CpuBackend::rms_norm_forward(const float*, const float*, float*, float*, int64_t, int64_t, float) { fail("rms_norm: not implemented on cpu"); }
void CpuBackend::rms_norm_backward(const float*, const float*, const float*, const float*, float*, float*, int64_t, int64_t) { fail("rms_norm: not implemented on cpu"); }
}  // namespace gtpo
