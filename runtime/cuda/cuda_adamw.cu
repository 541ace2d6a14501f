// The fused AdamW update on the GPU: cpu_adamw.cpp's arithmetic, element for element.
//
// The step scalars are computed on the host by the same expressions as the CPU backend, and each element
// goes through adamw_element (cuda_elementwise_math.cuh), whose unfused IEEE operations round where the
// CPU's do. So, sqrt and division being correctly rounded on both sides, a step gives the CPU's bits.
#include "runtime/cuda/cuda_adamw_kernels.cuh"
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::adamw_step(float* param, const float* grad, float* m, float* v, int64_t n, float lr, float beta1,
                             float beta2, float eps, float weight_decay, float bias_correction1,
                             float bias_correction2) {
  GTPO_PRIMITIVE("adamw_step");
  if (n <= 0) return;
  AdamwScalars k;
  k.lr = lr;
  k.beta1 = beta1;
  k.beta2 = beta2;
  k.eps = eps;
  k.bias_correction1 = bias_correction1;
  k.bias_correction2 = bias_correction2;
  k.decay = 1.0f - lr * weight_decay;  // host code, built with -ffp-contract=off like the CPU backend
  k.one_minus_b1 = 1.0f - beta1;
  k.one_minus_b2 = 1.0f - beta2;
  adamw_kernel<<<grid_for(n, kAdamwThreads), kAdamwThreads, 0, stream_of(*this)>>>(param, grad, m, v, n, k);
  GTPO_CUDA_CHECK_LAUNCH();
}

}  // namespace gtpo::cuda
