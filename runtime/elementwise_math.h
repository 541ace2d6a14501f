// Per-element formulas of the elementwise and AdamW primitives, one definition that both backends compile:
// the CPU's loops (cpu_elementwise.cpp, cpu_adamw.cpp) and the CUDA kernels (cuda_elementwise_kernels.cuh,
// cuda_adamw_kernels.cuh) call these same functions.
//
// Every multiply, add and divide goes through the unfused ieee:: helpers (cuda_ieee.cuh): on the device
// they round where the host rounds (nvcc would fuse a*b + c), so the arithmetic ops, sigmoid/silu and AdamW
// give the same bits on both backends, and only expf/logf/tanhf/powf (CUDA's libm, a few ulp from glibc's)
// can differ. On the host the helpers are the plain operators.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/exp_poly.h"  // first: defines GTPO_HD for a host compiler
//
#include "runtime/backend.h"
#include "runtime/cuda/cuda_ieee.cuh"
#include "runtime/error.h"

#ifndef GTPO_HD
#define GTPO_HD __host__ __device__ __forceinline__
#endif

namespace gtpo::elementwise {

namespace ieee = cuda::ieee;

// f(op_tag<op>): each backend's loop or kernel per op, the formulas' switch folded away at compile time.
template <auto Op>
constexpr std::integral_constant<decltype(Op), Op> op_tag{};

// clang-format off
template <typename F>
void dispatch_unary(UnaryOp op, F&& f) {
  using U = UnaryOp;
  switch (op) {
    case U::neg: return f(op_tag<U::neg>);
    case U::exp: return f(op_tag<U::exp>);
    case U::log: return f(op_tag<U::log>);
    case U::relu: return f(op_tag<U::relu>);
    case U::gelu_tanh: return f(op_tag<U::gelu_tanh>);
    case U::silu: return f(op_tag<U::silu>);
    case U::sigmoid: return f(op_tag<U::sigmoid>);
    case U::tanh: return f(op_tag<U::tanh>);
    case U::sqrt: return f(op_tag<U::sqrt>);
    case U::square: return f(op_tag<U::square>);
    case U::reciprocal: return f(op_tag<U::reciprocal>);
    case U::scale: return f(op_tag<U::scale>);
    case U::add_scalar: return f(op_tag<U::add_scalar>);
    case U::pow_scalar: return f(op_tag<U::pow_scalar>);
  }
  fail("unary: unknown op");
}

template <typename F>
void dispatch_binary(BinaryOp op, F&& f) {
  using B = BinaryOp;
  switch (op) {
    case B::add: return f(op_tag<B::add>);
    case B::sub: return f(op_tag<B::sub>);
    case B::mul: return f(op_tag<B::mul>);
    case B::div: return f(op_tag<B::div>);
  }
  fail("binary: unknown op");
}
// clang-format on

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;
constexpr float kGeluA3 = 3.0f * kGeluA;

GTPO_HD float bits_to_float(int32_t bits) {
#ifdef __CUDA_ARCH__
  return __int_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

// e^x over the whole float range (sigmoid, silu, the token choice): runtime/exp_poly.h's polynomial, 2^n as
// two exact power-of-two factors so that n up to 128 stays finite; x > 88.7228 gives +inf, x < -87 gives 0.
// A NaN x becomes -87 before the float-to-int conversion (undefined for NaN) and is restored at the end.
// The CPU's loops vectorise it, unlike the scalar libm call.
GTPO_HD float exp_any(float x) {
  using namespace ieee;
  const float low = -87.0f < x ? x : -87.0f;
  const float t = 88.72283f < low ? 88.72283f : low;
  const fp::ExpParts e = fp::exp_parts(t);
  const int32_t ni = static_cast<int32_t>(e.n);
  const int32_t half = ni / 2;  // both factors stay normal: |half|, |ni - half| <= 64
  const float y = mul(mul(e.e_r, bits_to_float((half + 127) << 23)), bits_to_float((ni - half + 127) << 23));
  return x < -87.0f ? 0.0f : (x > 88.72283f ? INFINITY : (x == x ? y : x));
}

GTPO_HD float sigmoid_of(float x) { return ieee::div(1.0f, ieee::add(1.0f, exp_any(-x))); }

// The argument of tanh in gelu_tanh: sqrt(2/pi) (x + 0.044715 x^3), with x^3 as ((a x) x) x like the CPU.
GTPO_HD float gelu_inner(float x) {
  using namespace ieee;
  return mul(kGeluC, add(x, mul(mul(mul(kGeluA, x), x), x)));
}

template <UnaryOp Op>
GTPO_HD float unary_value(float x, float s) {
  using namespace ieee;
  switch (Op) {
    case UnaryOp::neg: return -x;
    case UnaryOp::exp: return ::expf(x);
    case UnaryOp::log: return ::logf(x);
    case UnaryOp::relu: return x > 0.0f ? x : 0.0f;  // NaN -> 0, as on the CPU
    case UnaryOp::gelu_tanh: return mul(mul(0.5f, x), add(1.0f, ::tanhf(gelu_inner(x))));
    case UnaryOp::silu: return mul(x, sigmoid_of(x));
    case UnaryOp::sigmoid: return sigmoid_of(x);
    case UnaryOp::tanh: return ::tanhf(x);
    case UnaryOp::sqrt: return ieee::sqrt(x);
    case UnaryOp::square: return mul(x, x);
    case UnaryOp::reciprocal: return div(1.0f, x);
    case UnaryOp::scale: return mul(x, s);
    case UnaryOp::add_scalar: return add(x, s);
    case UnaryOp::pow_scalar: return ::powf(x, s);
  }
  return x;  // unreachable: every op is a case above
}

// Which saved forward value each derivative reads (runtime/ops/elementwise.cpp saves just that one and
// passes null for the other).
constexpr bool grad_reads_input(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::relu || op == UnaryOp::gelu_tanh || op == UnaryOp::silu ||
         op == UnaryOp::square || op == UnaryOp::pow_scalar;
}
constexpr bool grad_reads_output(UnaryOp op) {
  return op == UnaryOp::exp || op == UnaryOp::sigmoid || op == UnaryOp::tanh || op == UnaryOp::sqrt ||
         op == UnaryOp::reciprocal;
}

// gy * dy/dx, with the CPU's operation order (its a * b * c is (a * b) * c).
template <UnaryOp Op>
GTPO_HD float unary_grad(float x, float y, float gy, float s) {
  using namespace ieee;
  switch (Op) {
    case UnaryOp::neg: return -gy;
    case UnaryOp::exp: return mul(gy, y);
    case UnaryOp::log: return div(gy, x);
    case UnaryOp::relu: return x > 0.0f ? gy : 0.0f;
    case UnaryOp::gelu_tanh: {
      const float t = ::tanhf(gelu_inner(x));
      const float du = mul(kGeluC, add(1.0f, mul(mul(kGeluA3, x), x)));
      return mul(gy, add(mul(0.5f, add(1.0f, t)), mul(mul(mul(0.5f, x), sub(1.0f, mul(t, t))), du)));
    }
    case UnaryOp::silu: {
      const float sg = sigmoid_of(x);
      return mul(mul(gy, sg), add(1.0f, mul(x, sub(1.0f, sg))));
    }
    case UnaryOp::sigmoid: return mul(mul(gy, y), sub(1.0f, y));
    case UnaryOp::tanh: return mul(gy, sub(1.0f, mul(y, y)));
    case UnaryOp::sqrt: return div(mul(gy, 0.5f), y);
    case UnaryOp::square: return mul(mul(gy, 2.0f), x);
    case UnaryOp::reciprocal: return mul(mul(-gy, y), y);
    case UnaryOp::scale: return mul(gy, s);
    case UnaryOp::add_scalar: return gy;
    case UnaryOp::pow_scalar: return mul(mul(gy, s), ::powf(x, sub(s, 1.0f)));
  }
  return gy;  // unreachable
}

// The element of a broadcast operand that output (r, c) of a [rows, cols] binary op reads.
GTPO_HD int64_t operand_index(BroadcastMode mode, int64_t r, int64_t c, int64_t cols) {
  switch (mode) {
    case BroadcastMode::full: return r * cols + c;
    case BroadcastMode::repeat_rows: return c;
    case BroadcastMode::repeat_cols: return r;
  }
  return 0;
}

template <BinaryOp Op>
GTPO_HD float binary_value(float a, float b) {
  using namespace ieee;
  switch (Op) {
    case BinaryOp::add: return add(a, b);
    case BinaryOp::sub: return sub(a, b);
    case BinaryOp::mul: return mul(a, b);
    case BinaryOp::div: return div(a, b);
  }
  return a;  // unreachable
}

// ---- AdamW (PyTorch's: decoupled weight decay applied to the parameter before the Adam step) ----------
// The per-step scalars, computed once on the host.
struct AdamwScalars {
  float lr, beta1, beta2, eps, bias_correction1, bias_correction2;
  float decay;         // 1 - lr * weight_decay
  float one_minus_b1;  // 1 - beta1
  float one_minus_b2;  // 1 - beta2
};

// Host code, built with -ffp-contract=off. p *= (1 - lr*wd) is PyTorch's p -= lr*wd*p in one rounding.
inline AdamwScalars adamw_scalars(const AdamWStep& s) {
  return {s.lr,
          s.beta1,
          s.beta2,
          s.eps,
          s.bias_correction1,
          s.bias_correction2,
          1.0f - s.lr * s.weight_decay,
          1.0f - s.beta1,
          1.0f - s.beta2};
}

// One element's update.
GTPO_HD void adamw_element(float& param, float g, float& m, float& v, const AdamwScalars& k) {
  using namespace ieee;
  const float mi = add(mul(k.beta1, m), mul(k.one_minus_b1, g));
  const float vi = add(mul(k.beta2, v), mul(k.one_minus_b2, mul(g, g)));
  m = mi;
  v = vi;
  const float m_hat = div(mi, k.bias_correction1);
  const float v_hat = div(vi, k.bias_correction2);
  param = sub(mul(param, k.decay), mul(k.lr, div(m_hat, add(ieee::sqrt(v_hat), k.eps))));
}

}  // namespace gtpo::elementwise
