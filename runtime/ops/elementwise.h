// Elementwise ops: binary arithmetic with trailing-dims broadcasting, scalar ops and activations.
//
// Broadcasting: the operand with fewer elements must be either a suffix of the other's shape
// ([C] or [T, C] against [B, T, C]; leading 1s ignored; a scalar always fits) or the other's leading
// dims followed by size-1 dims ([B, T, 1] against [B, T, C]).
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

Tensor add_scalar(const Tensor& x, float s);
Tensor mul_scalar(const Tensor& x, float s);
Tensor pow_scalar(const Tensor& x, float exponent);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // tanh approximation, as GPT-2
Tensor silu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor square(const Tensor& x);
// silu(gate) * up, the Llama MLP's gate: one fused pass each way where the backend has it
// (Capability::fused_swiglu), else silu and mul. Same shapes, no broadcasting.
Tensor swiglu(const Tensor& gate, const Tensor& up);

}  // namespace gtpo::ops

namespace gtpo {
inline Tensor operator+(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return ops::mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return ops::div(a, b); }
inline Tensor operator-(const Tensor& x) { return ops::neg(x); }
inline Tensor operator+(const Tensor& x, float s) { return ops::add_scalar(x, s); }
inline Tensor operator-(const Tensor& x, float s) { return ops::add_scalar(x, -s); }
inline Tensor operator*(const Tensor& x, float s) { return ops::mul_scalar(x, s); }
inline Tensor operator*(float s, const Tensor& x) { return ops::mul_scalar(x, s); }
inline Tensor operator/(const Tensor& x, float s) { return ops::mul_scalar(x, 1.0f / s); }
}  // namespace gtpo
