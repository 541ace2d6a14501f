// Placeholder until this primitive family is implemented: every call fails loudly, never silently.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

void CpuBackend::cross_entropy_forward(const float*, const int32_t*, float*, float*, int64_t, int64_t, int32_t) { fail("cross_entropy: not implemented on cpu"); }
void CpuBackend::cross_entropy_backward(const float*, const int32_t*, const float*, const float*, float*, int64_t, int64_t, int32_t) { fail("cross_entropy: not implemented on cpu"); }
void CpuBackend::logprob_entropy_forward(const float*, const int32_t*, float*, float*, float*, int64_t, int64_t, float) { fail("logprob_entropy: not implemented on cpu"); }
void CpuBackend::logprob_entropy_backward(const float*, const int32_t*, const float*, const float*, const float*, const float*, float*, int64_t, int64_t, float) { fail("logprob_entropy: not implemented on cpu"); }
}  // namespace gtpo
