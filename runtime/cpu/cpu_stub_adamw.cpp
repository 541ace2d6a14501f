// Placeholder until this primitive family is implemented: every call fails loudly, never silently.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

void CpuBackend::adamw_step(float*, const float*, float*, float*, int64_t, float, float, float, float, float, float, float) { fail("adamw: not implemented on cpu"); }
}  // namespace gtpo
