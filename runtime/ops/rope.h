// Rotary position embedding (RoPE), half-split convention as Hugging Face Llama's rotate_half: the pairs
// rotated together are (d, d + D/2), by the angle pos * theta^(-2d/D), d in [0, D/2).
#pragma once
#include "runtime/rope_frequencies.h"
#include "runtime/tensor.h"

namespace gtpo::ops {

// x [B, T, H, D] f32 (D even), positions i32 [B, T] -> [B, T, H, D]:
//   out[.., d]       = x[.., d] cos - x[.., d + D/2] sin
//   out[.., d + D/2] = x[.., d + D/2] cos + x[.., d] sin
// The angle and its cos/sin are computed in double and rounded once to float (HF computes the angle in
// fp32, so the two differ by the fp32 rounding of HF's angle, ~1e-7 * pos rad). Any i32 position is
// accepted (negative ones rotate backwards). Differentiable w.r.t. x: the backward rotates by -angle.
// FREQ is the base theta (a bare float converts) with an optional rescaling (linear, llama3).
Tensor rope(const Tensor& x, const Tensor& positions, const RopeFrequencies& freq = RopeFrequencies());

}  // namespace gtpo::ops
