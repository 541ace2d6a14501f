// The fused AdamW update on the GPU: cpu_adamw.cpp's arithmetic, element for element.
//
// The step scalars are computed on the host by the same expressions as the CPU backend, and each element
// goes through adamw_element (runtime/elementwise_math.h), whose unfused IEEE operations round where the
// CPU's do. So, sqrt and division being correctly rounded on both sides, a step gives the CPU's bits.
#include "runtime/cuda/cuda_adamw_kernels.cuh"
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::adamw_step(float* param, const float* grad, float* m, float* v, int64_t n,
                             const AdamWStep& step) {
  GTPO_PRIMITIVE("adamw_step");
  if (n <= 0) return;
  const AdamwScalars k = adamw_scalars(step);
  GTPO_LAUNCH(adamw_kernel, grid_for(n, kAdamwThreads), kAdamwThreads, 0, stream_of(*this), param, grad, m, v,
              n, k);
}

}  // namespace gtpo::cuda
