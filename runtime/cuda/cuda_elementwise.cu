// Elementwise primitives: unary maps with their derivatives, and broadcasting binary ops.
//
// The formulas live in cuda_elementwise_math.cuh (shared with host checks); here they are instantiated one
// kernel per op, so the switch over ops folds away at compile time. Each output element is written by one
// thread from values at the same index (or a broadcast one), so in-place calls (y == x, gx == gy,
// out == a full operand) are safe, as they are on the CPU.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_elementwise_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

namespace {

template <UnaryOp Op>
void launch_unary(cudaStream_t stream, const float* x, float* y, int64_t n, float s) {
  unary_kernel<Op><<<grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(x, y, n, s);
  GTPO_CUDA_CHECK_LAUNCH();
}

template <UnaryOp Op>
void launch_unary_backward(cudaStream_t stream, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                           float s) {
  unary_backward_kernel<Op><<<grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(x, y, gy, gx, n, s);
  GTPO_CUDA_CHECK_LAUNCH();
}

template <BinaryOp Op>
void launch_binary(cudaStream_t stream, const float* a, const float* b, float* out, const BinaryPlan& p) {
  const int64_t n = p.rows * p.cols;
  if (p.a == BroadcastMode::full && p.b == BroadcastMode::full)
    binary_full_kernel<Op><<<grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(a, b, out, n);
  else
    binary_broadcast_kernel<Op><<<grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream>>>(
        a, b, out, p.rows, p.cols, p.a, p.b);
  GTPO_CUDA_CHECK_LAUNCH();
}
}  // namespace

void CudaBackend::unary(UnaryOp op, const float* x, float* y, int64_t n, float s) {
  GTPO_PRIMITIVE("unary");
  if (n <= 0) return;
  const cudaStream_t st = stream_of(*this);
  switch (op) {
    case UnaryOp::neg: return launch_unary<UnaryOp::neg>(st, x, y, n, s);
    case UnaryOp::exp: return launch_unary<UnaryOp::exp>(st, x, y, n, s);
    case UnaryOp::log: return launch_unary<UnaryOp::log>(st, x, y, n, s);
    case UnaryOp::relu: return launch_unary<UnaryOp::relu>(st, x, y, n, s);
    case UnaryOp::gelu_tanh: return launch_unary<UnaryOp::gelu_tanh>(st, x, y, n, s);
    case UnaryOp::silu: return launch_unary<UnaryOp::silu>(st, x, y, n, s);
    case UnaryOp::sigmoid: return launch_unary<UnaryOp::sigmoid>(st, x, y, n, s);
    case UnaryOp::tanh: return launch_unary<UnaryOp::tanh>(st, x, y, n, s);
    case UnaryOp::sqrt: return launch_unary<UnaryOp::sqrt>(st, x, y, n, s);
    case UnaryOp::square: return launch_unary<UnaryOp::square>(st, x, y, n, s);
    case UnaryOp::reciprocal: return launch_unary<UnaryOp::reciprocal>(st, x, y, n, s);
    case UnaryOp::scale: return launch_unary<UnaryOp::scale>(st, x, y, n, s);
    case UnaryOp::add_scalar: return launch_unary<UnaryOp::add_scalar>(st, x, y, n, s);
    case UnaryOp::pow_scalar: return launch_unary<UnaryOp::pow_scalar>(st, x, y, n, s);
  }
  fail("unary: unknown op");
}

void CudaBackend::unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                                 float s) {
  GTPO_PRIMITIVE("unary_backward");
  if (n <= 0) return;
  const cudaStream_t st = stream_of(*this);
  switch (op) {
    case UnaryOp::neg: return launch_unary_backward<UnaryOp::neg>(st, x, y, gy, gx, n, s);
    case UnaryOp::exp: return launch_unary_backward<UnaryOp::exp>(st, x, y, gy, gx, n, s);
    case UnaryOp::log: return launch_unary_backward<UnaryOp::log>(st, x, y, gy, gx, n, s);
    case UnaryOp::relu: return launch_unary_backward<UnaryOp::relu>(st, x, y, gy, gx, n, s);
    case UnaryOp::gelu_tanh: return launch_unary_backward<UnaryOp::gelu_tanh>(st, x, y, gy, gx, n, s);
    case UnaryOp::silu: return launch_unary_backward<UnaryOp::silu>(st, x, y, gy, gx, n, s);
    case UnaryOp::sigmoid: return launch_unary_backward<UnaryOp::sigmoid>(st, x, y, gy, gx, n, s);
    case UnaryOp::tanh: return launch_unary_backward<UnaryOp::tanh>(st, x, y, gy, gx, n, s);
    case UnaryOp::sqrt: return launch_unary_backward<UnaryOp::sqrt>(st, x, y, gy, gx, n, s);
    case UnaryOp::square: return launch_unary_backward<UnaryOp::square>(st, x, y, gy, gx, n, s);
    case UnaryOp::reciprocal: return launch_unary_backward<UnaryOp::reciprocal>(st, x, y, gy, gx, n, s);
    case UnaryOp::scale: return launch_unary_backward<UnaryOp::scale>(st, x, y, gy, gx, n, s);
    case UnaryOp::add_scalar: return launch_unary_backward<UnaryOp::add_scalar>(st, x, y, gy, gx, n, s);
    case UnaryOp::pow_scalar: return launch_unary_backward<UnaryOp::pow_scalar>(st, x, y, gy, gx, n, s);
  }
  fail("unary_backward: unknown op");
}

void CudaBackend::binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) {
  GTPO_PRIMITIVE("binary");
  if (plan.rows <= 0 || plan.cols <= 0) return;
  const cudaStream_t st = stream_of(*this);
  switch (op) {
    case BinaryOp::add: return launch_binary<BinaryOp::add>(st, a, b, out, plan);
    case BinaryOp::sub: return launch_binary<BinaryOp::sub>(st, a, b, out, plan);
    case BinaryOp::mul: return launch_binary<BinaryOp::mul>(st, a, b, out, plan);
    case BinaryOp::div: return launch_binary<BinaryOp::div>(st, a, b, out, plan);
  }
  fail("binary: unknown op");
}

}  // namespace gtpo::cuda
