// The fused AdamW update on the CPU: runtime/elementwise_math.h's adamw_element (PyTorch's AdamW, the CUDA
// kernel's formula too) over the parameters. Each element is updated independently, so chunking through
// parallel_for gives bitwise-identical results for any thread count.
#include "runtime/cpu/cpu_backend.h"
#include "runtime/elementwise_math.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

void CpuBackend::adamw_step(float* param, const float* grad, float* m, float* v, int64_t n,
                            const AdamWStep& s) {
  GTPO_PRIMITIVE("adamw_step");
  const elementwise::AdamwScalars k = elementwise::adamw_scalars(s);
  // A division and a square root per element: chunks of 2048 put a hidden-64 model's 64 x 64 and 64 x 192
  // matrices on both threads (at 16384 every tensor of the quick start's model was updated by one).
  parallel_for(n, 1 << 11, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) elementwise::adamw_element(param[i], grad[i], m[i], v[i], k);
  });
}

}  // namespace gtpo
