// Placeholder until this primitive family is implemented: every call fails loudly, never silently.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

void CpuBackend::embedding_forward(const float*, const int32_t*, float*, int64_t, int64_t) { fail("embedding: not implemented on cpu"); }
void CpuBackend::embedding_backward(const int32_t*, const float*, float*, int64_t, int64_t, int64_t) { fail("embedding: not implemented on cpu"); }
void CpuBackend::rope(const float*, const int32_t*, float*, int64_t, int64_t, int64_t, float, bool) { fail("rope: not implemented on cpu"); }
}  // namespace gtpo
