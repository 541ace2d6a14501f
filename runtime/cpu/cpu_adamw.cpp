// The fused AdamW update on the CPU.
//
// Each element is updated independently, so chunking through parallel_for gives bitwise-identical results
// for any thread count. The arithmetic follows PyTorch's AdamW (decoupled weight decay applied to the
// parameter before the Adam step) so that runs can be compared against it.
#include <cmath>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

void CpuBackend::adamw_step(float* param, const float* grad, float* m, float* v, int64_t n,
                            const AdamWStep& s) {
  GTPO_PRIMITIVE("adamw_step");
  const float lr = s.lr, beta1 = s.beta1, beta2 = s.beta2, eps = s.eps;
  const float bias_correction1 = s.bias_correction1, bias_correction2 = s.bias_correction2;
  // p *= (1 - lr*wd) is PyTorch's form of p -= lr*wd*p; one factor per step keeps it a single rounding.
  const float decay = 1.0f - lr * s.weight_decay;
  const float one_minus_b1 = 1.0f - beta1;
  const float one_minus_b2 = 1.0f - beta2;
  // A division and a square root per element: chunks of 2048 put a hidden-64 model's 64 x 64 and 64 x 192
  // matrices on both threads (at 16384 every tensor of the quick start's model was updated by one).
  parallel_for(n, 1 << 11, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float g = grad[i];
      const float mi = beta1 * m[i] + one_minus_b1 * g;
      const float vi = beta2 * v[i] + one_minus_b2 * (g * g);
      m[i] = mi;
      v[i] = vi;
      const float m_hat = mi / bias_correction1;
      const float v_hat = vi / bias_correction2;
      param[i] = param[i] * decay - lr * (m_hat / (std::sqrt(v_hat) + eps));
    }
  });
}

}  // namespace gtpo
