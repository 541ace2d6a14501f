// The AdamW kernel (design: cuda_adamw.cu).
// Device code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of
// thread blocks.
#pragma once
#include "runtime/cuda/cuda_index_math.cuh"
#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/elementwise_math.h"

namespace gtpo::cuda {

using namespace elementwise;  // the formulas the CPU backend runs too

namespace {
constexpr int kAdamwThreads = 256;

__global__ void adamw_kernel(float* param, const float* grad, float* m, float* v, int64_t n, AdamwScalars k) {
  for (int64_t i = first_index(); i < n; i += index_step()) {
    float p = param[i], mi = m[i], vi = v[i];
    adamw_element(p, grad[i], mi, vi, k);
    m[i] = mi;
    v[i] = vi;
    param[i] = p;
  }
}
}  // namespace

}  // namespace gtpo::cuda
