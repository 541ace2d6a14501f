// Row normalisations over the last dim, with learned per-channel weights.
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

// GPT-2 LayerNorm: y = (x - mean) * rsqrt(var + eps) * weight + bias, var biased (divides by C), over the
// last dim C of x. weight is [C]; bias is [C] or an undefined Tensor (no bias).
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

// Llama RMSNorm, computed in fp32: y = x * rsqrt(mean(x^2) + eps) * weight over the last dim C; weight is [C].
Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps = 1e-5f);

}  // namespace gtpo::ops
