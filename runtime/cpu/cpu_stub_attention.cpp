// Placeholder until this primitive family is implemented: every call fails loudly, never silently.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

void CpuBackend::attention_forward(const AttentionArgs&, const float*, const float*, const float*, float*, float*) { fail("attention: not implemented on cpu"); }
void CpuBackend::attention_backward(const AttentionArgs&, const float*, const float*, const float*, const float*, const float*, const float*, float*, float*, float*) { fail("attention: not implemented on cpu"); }
}  // namespace gtpo
