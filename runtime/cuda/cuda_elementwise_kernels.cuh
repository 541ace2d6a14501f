// Kernels of the elementwise primitives, one instantiation per op (design: cuda_elementwise.cu).
// Device code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of
// thread blocks.
#pragma once
#include "runtime/cuda/cuda_index_math.cuh"
#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/elementwise_math.h"

namespace gtpo::cuda {

using namespace elementwise;  // the formulas the CPU backend runs too

namespace {

constexpr int kElementwiseThreads = 256;

template <UnaryOp Op>
__global__ void unary_kernel(const float* x, float* y, int64_t n, float s) {
  for (int64_t i = first_index(); i < n; i += index_step()) y[i] = unary_value<Op>(x[i], s);
}

// x or y may be null when the derivative does not read it (the op saved only what it needs).
template <UnaryOp Op>
__global__ void unary_backward_kernel(const float* x, const float* y, const float* gy, float* gx, int64_t n, float s) {
  for (int64_t i = first_index(); i < n; i += index_step()) {
    const float xi = grad_reads_input(Op) ? x[i] : 0.0f;
    const float yi = grad_reads_output(Op) ? y[i] : 0.0f;
    gx[i] = unary_grad<Op>(xi, yi, gy[i], s);
  }
}

// Both operands full: no index arithmetic beyond i.
template <BinaryOp Op>
__global__ void binary_full_kernel(const float* a, const float* b, float* out, int64_t n) {
  for (int64_t i = first_index(); i < n; i += index_step()) out[i] = binary_value<Op>(a[i], b[i]);
}

template <BinaryOp Op>
__global__ void binary_broadcast_kernel(const float* a, const float* b, float* out, int64_t rows, int64_t cols,
                                        BroadcastMode mode_a, BroadcastMode mode_b) {
  const int64_t n = rows * cols;
  for (int64_t i = first_index(); i < n; i += index_step()) {
    const int64_t r = i / cols;
    const int64_t c = i - r * cols;
    out[i] = binary_value<Op>(a[operand_index(mode_a, r, c, cols)], b[operand_index(mode_b, r, c, cols)]);
  }
}

}  // namespace

}  // namespace gtpo::cuda
