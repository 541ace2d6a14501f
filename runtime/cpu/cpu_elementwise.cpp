// Elementwise primitives: unary maps with their derivatives, and broadcasting binary ops.
#include <cmath>
#include <utility>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/cpu_vec_math.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;
constexpr int64_t kElementGrain = 1 << 15;
// Maps that take an exp, tanh, log or pow per element cost ~8x a plain one: smaller chunks, so that a decode
// step's [128, intermediate] SiLU is split over the threads too.
constexpr int64_t kTranscendentalGrain = 1 << 12;

inline float sigmoid(float x) { return 1.0f / (1.0f + cpu_math::exp_any(-x)); }

template <typename F>
void map(int64_t n, F&& f, int64_t grain = kElementGrain) {
  parallel_for(n, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) f(i);
  });
}

template <typename F>
void map_transcendental(int64_t n, F&& f) {
  map(n, std::forward<F>(f), kTranscendentalGrain);
}
}  // namespace

void CpuBackend::unary(UnaryOp op, const float* x, float* y, int64_t n, float s) {
  GTPO_PRIMITIVE("unary");
  switch (op) {
    case UnaryOp::neg: return map(n, [&](int64_t i) { y[i] = -x[i]; });
    case UnaryOp::exp: return map_transcendental(n, [&](int64_t i) { y[i] = std::exp(x[i]); });
    case UnaryOp::log: return map_transcendental(n, [&](int64_t i) { y[i] = std::log(x[i]); });
    case UnaryOp::relu: return map(n, [&](int64_t i) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; });
    case UnaryOp::gelu_tanh:
      return map_transcendental(n, [&](int64_t i) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + std::tanh(kGeluC * (v + kGeluA * v * v * v)));
      });
    case UnaryOp::silu: return map_transcendental(n, [&](int64_t i) { y[i] = x[i] * sigmoid(x[i]); });
    case UnaryOp::sigmoid: return map_transcendental(n, [&](int64_t i) { y[i] = sigmoid(x[i]); });
    case UnaryOp::tanh: return map_transcendental(n, [&](int64_t i) { y[i] = std::tanh(x[i]); });
    case UnaryOp::sqrt: return map(n, [&](int64_t i) { y[i] = std::sqrt(x[i]); });
    case UnaryOp::square: return map(n, [&](int64_t i) { y[i] = x[i] * x[i]; });
    case UnaryOp::reciprocal: return map(n, [&](int64_t i) { y[i] = 1.0f / x[i]; });
    case UnaryOp::scale: return map(n, [&](int64_t i) { y[i] = x[i] * s; });
    case UnaryOp::add_scalar: return map(n, [&](int64_t i) { y[i] = x[i] + s; });
    case UnaryOp::pow_scalar: return map_transcendental(n, [&](int64_t i) { y[i] = std::pow(x[i], s); });
  }
  fail("unary: unknown op");
}

void CpuBackend::unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                                float s) {
  GTPO_PRIMITIVE("unary_backward");
  switch (op) {
    case UnaryOp::neg: return map(n, [&](int64_t i) { gx[i] = -gy[i]; });
    case UnaryOp::exp: return map(n, [&](int64_t i) { gx[i] = gy[i] * y[i]; });
    case UnaryOp::log: return map(n, [&](int64_t i) { gx[i] = gy[i] / x[i]; });
    case UnaryOp::relu: return map(n, [&](int64_t i) { gx[i] = x[i] > 0.0f ? gy[i] : 0.0f; });
    case UnaryOp::gelu_tanh:
      return map_transcendental(n, [&](int64_t i) {
        const float v = x[i];
        const float u = kGeluC * (v + kGeluA * v * v * v);
        const float t = std::tanh(u);
        const float du = kGeluC * (1.0f + 3.0f * kGeluA * v * v);
        gx[i] = gy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
      });
    case UnaryOp::silu:
      return map_transcendental(n, [&](int64_t i) {
        const float sg = sigmoid(x[i]);
        gx[i] = gy[i] * sg * (1.0f + x[i] * (1.0f - sg));
      });
    case UnaryOp::sigmoid: return map(n, [&](int64_t i) { gx[i] = gy[i] * y[i] * (1.0f - y[i]); });
    case UnaryOp::tanh: return map(n, [&](int64_t i) { gx[i] = gy[i] * (1.0f - y[i] * y[i]); });
    case UnaryOp::sqrt: return map(n, [&](int64_t i) { gx[i] = gy[i] * 0.5f / y[i]; });
    case UnaryOp::square: return map(n, [&](int64_t i) { gx[i] = gy[i] * 2.0f * x[i]; });
    case UnaryOp::reciprocal: return map(n, [&](int64_t i) { gx[i] = -gy[i] * y[i] * y[i]; });
    case UnaryOp::scale: return map(n, [&](int64_t i) { gx[i] = gy[i] * s; });
    case UnaryOp::add_scalar: return map(n, [&](int64_t i) { gx[i] = gy[i]; });
    case UnaryOp::pow_scalar: return map_transcendental(n, [&](int64_t i) { gx[i] = gy[i] * s * std::pow(x[i], s - 1.0f); });
  }
  fail("unary_backward: unknown op");
}

// SwiGLU fused: each expression is the unfused chain's, in its order (silu's x * sigmoid(x), then mul; in
// backward mul's gy * up and gy * silu, then silu's derivative), so the bits are the same; what goes is
// three of five passes over [tokens, intermediate] and the saved silu output.
void CpuBackend::swiglu_forward(const float* gate, const float* up, float* out, int64_t n) {
  GTPO_PRIMITIVE("swiglu_forward");
  map_transcendental(n, [&](int64_t i) {
    const float s = gate[i] * sigmoid(gate[i]);
    out[i] = s * up[i];
  });
}

void CpuBackend::swiglu_backward(const float* gate, const float* up, const float* gout, float* ggate,
                                 float* gup, int64_t n) {
  GTPO_PRIMITIVE("swiglu_backward");
  map_transcendental(n, [&](int64_t i) {
    const float x = gate[i], sg = sigmoid(x);
    const float gs = gout[i] * up[i];
    gup[i] = gout[i] * (x * sg);
    ggate[i] = gs * sg * (1.0f + x * (1.0f - sg));
  });
}

namespace {
inline int64_t operand_index(BroadcastMode mode, int64_t r, int64_t c, int64_t cols) {
  switch (mode) {
    case BroadcastMode::full: return r * cols + c;
    case BroadcastMode::repeat_rows: return c;
    case BroadcastMode::repeat_cols: return r;
  }
  return 0;
}

template <typename F>
void binary_loop(const float* a, const float* b, float* out, const BinaryPlan& p, F&& f) {
  const int64_t cols = p.cols;
  if (p.a == BroadcastMode::full && p.b == BroadcastMode::full) {
    map(p.rows * cols, [&](int64_t i) { out[i] = f(a[i], b[i]); });
    return;
  }
  parallel_for(p.rows, grain_for(cols, kElementGrain), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] = f(a[operand_index(p.a, r, c, cols)], b[operand_index(p.b, r, c, cols)]);
  });
}
}  // namespace

void CpuBackend::binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) {
  GTPO_PRIMITIVE("binary");
  switch (op) {
    case BinaryOp::add: return binary_loop(a, b, out, plan, [](float x, float y) { return x + y; });
    case BinaryOp::sub: return binary_loop(a, b, out, plan, [](float x, float y) { return x - y; });
    case BinaryOp::mul: return binary_loop(a, b, out, plan, [](float x, float y) { return x * y; });
    case BinaryOp::div: return binary_loop(a, b, out, plan, [](float x, float y) { return x / y; });
  }
  fail("binary: unknown op");
}

}  // namespace gtpo
