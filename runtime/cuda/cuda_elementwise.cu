// Elementwise primitives: unary maps with their derivatives, and broadcasting binary ops.
//
// The formulas live in runtime/elementwise_math.h (the CPU backend runs them too); here they are instantiated
// one kernel per op, so the switch over ops folds away at compile time. Each output element is written by one
// thread from values at the same index (or a broadcast one), so in-place calls (y == x, gx == gy,
// out == a full operand) are safe, as they are on the CPU.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_elementwise_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

namespace {

template <UnaryOp Op>
void launch_unary(cudaStream_t stream, const float* x, float* y, int64_t n, float s) {
  GTPO_LAUNCH(unary_kernel<Op>, grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream, x, y, n, s);
}

template <UnaryOp Op>
void launch_unary_backward(cudaStream_t stream, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                           float s) {
  GTPO_LAUNCH(unary_backward_kernel<Op>, grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream, x,
              y, gy, gx, n, s);
}

template <BinaryOp Op>
void launch_binary(cudaStream_t stream, const float* a, const float* b, float* out, const BinaryPlan& p) {
  const int64_t n = p.rows * p.cols;
  if (p.a == BroadcastMode::full && p.b == BroadcastMode::full)
    GTPO_LAUNCH(binary_full_kernel<Op>, grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream, a,
                b, out, n);
  else
    GTPO_LAUNCH(binary_broadcast_kernel<Op>, grid_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream,
                a, b, out, p.rows, p.cols, p.a, p.b);
}
}  // namespace

void CudaBackend::unary(UnaryOp op, const float* x, float* y, int64_t n, float s) {
  GTPO_PRIMITIVE("unary");
  if (n <= 0) return;
  const cudaStream_t st = stream_of(*this);
  elementwise::dispatch_unary(op, [&](auto o) { launch_unary<decltype(o)::value>(st, x, y, n, s); });
}

void CudaBackend::unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                                 float s) {
  GTPO_PRIMITIVE("unary_backward");
  if (n <= 0) return;
  const cudaStream_t st = stream_of(*this);
  elementwise::dispatch_unary(
      op, [&](auto o) { launch_unary_backward<decltype(o)::value>(st, x, y, gy, gx, n, s); });
}

void CudaBackend::binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) {
  GTPO_PRIMITIVE("binary");
  if (plan.rows <= 0 || plan.cols <= 0) return;
  const cudaStream_t st = stream_of(*this);
  elementwise::dispatch_binary(op, [&](auto o) { launch_binary<decltype(o)::value>(st, a, b, out, plan); });
}

}  // namespace gtpo::cuda
