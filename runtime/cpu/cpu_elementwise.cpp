// Elementwise primitives: unary maps with their derivatives, and broadcasting binary ops.
#include <cmath>
#include <utility>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/elementwise_math.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {
using elementwise::sigmoid_of;
constexpr int64_t kElementGrain = 1 << 15;
// Maps that take an exp, tanh, log or pow per element cost ~8x a plain one: smaller chunks, so that a decode
// step's [128, intermediate] SiLU is split over the threads too (no bits move: each element is its own).
constexpr int64_t kTranscendentalGrain = 1 << 12;

constexpr int64_t grain_of(UnaryOp op, bool backward) {
  using U = UnaryOp;
  const bool always = op == U::gelu_tanh || op == U::silu || op == U::pow_scalar;
  const bool forward = op == U::exp || op == U::log || op == U::sigmoid || op == U::tanh;
  return always || (forward && !backward) ? kTranscendentalGrain : kElementGrain;
}

template <typename F>
void map(int64_t n, int64_t grain, F&& f) {
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}
}  // namespace

// The formulas are runtime/elementwise_math.h's, which the CUDA kernels run too.
void CpuBackend::unary(UnaryOp op, const float* x, float* y, int64_t n, float s) {
  GTPO_PRIMITIVE("unary");
  elementwise::dispatch_unary(op, [&](auto o) {
    constexpr UnaryOp kOp = decltype(o)::value;
    map(n, grain_of(kOp, false), [&](int64_t i) { y[i] = elementwise::unary_value<kOp>(x[i], s); });
  });
}

// x or y is null where the op's derivative does not read it (elementwise::grad_reads_input/output).
void CpuBackend::unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                                float s) {
  GTPO_PRIMITIVE("unary_backward");
  elementwise::dispatch_unary(op, [&](auto o) {
    constexpr UnaryOp kOp = decltype(o)::value;
    map(n, grain_of(kOp, true), [&](int64_t i) {
      const float xi = elementwise::grad_reads_input(kOp) ? x[i] : 0.0f;
      const float yi = elementwise::grad_reads_output(kOp) ? y[i] : 0.0f;
      gx[i] = elementwise::unary_grad<kOp>(xi, yi, gy[i], s);
    });
  });
}

// SwiGLU fused: each expression is the unfused chain's, in its order (silu's x * sigmoid(x), then mul; in
// backward mul's gy * up and gy * silu, then silu's derivative), so the bits are the same; what goes is
// three of five passes over [tokens, intermediate] and the saved silu output.
void CpuBackend::swiglu_forward(const float* gate, const float* up, float* out, int64_t n) {
  GTPO_PRIMITIVE("swiglu_forward");
  map(n, kTranscendentalGrain, [&](int64_t i) {
    const float s = gate[i] * sigmoid_of(gate[i]);
    out[i] = s * up[i];
  });
}

void CpuBackend::swiglu_backward(const float* gate, const float* up, const float* gout, float* ggate,
                                 float* gup, int64_t n) {
  GTPO_PRIMITIVE("swiglu_backward");
  map(n, kTranscendentalGrain, [&](int64_t i) {
    const float x = gate[i], sg = sigmoid_of(x);
    const float gs = gout[i] * up[i];
    gup[i] = gout[i] * (x * sg);
    ggate[i] = gs * sg * (1.0f + x * (1.0f - sg));
  });
}

namespace {
template <BinaryOp Op>
void binary_loop(const float* a, const float* b, float* out, const BinaryPlan& p) {
  using elementwise::binary_value, elementwise::operand_index;
  const int64_t cols = p.cols;
  if (p.a == BroadcastMode::full && p.b == BroadcastMode::full) {
    map(p.rows * cols, kElementGrain, [&](int64_t i) { out[i] = binary_value<Op>(a[i], b[i]); });
    return;
  }
  parallel_for(p.rows, grain_for(cols, kElementGrain), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] =
            binary_value<Op>(a[operand_index(p.a, r, c, cols)], b[operand_index(p.b, r, c, cols)]);
  });
}
}  // namespace

void CpuBackend::binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) {
  GTPO_PRIMITIVE("binary");
  elementwise::dispatch_binary(op, [&](auto o) { binary_loop<decltype(o)::value>(a, b, out, plan); });
}

}  // namespace gtpo
