// IEEE binary16 (F16) and bfloat16 (BF16) <-> float conversions, bit-exact and independent of the host's FPU
// modes. float -> half rounds to nearest, ties to even (what PyTorch's .half() / .bfloat16() do); NaN stays
// NaN.
#pragma once
#include <cstdint>

namespace gtpo::io {

float f16_to_f32(uint16_t bits);
float bf16_to_f32(uint16_t bits);
uint16_t f32_to_f16(float value);
uint16_t f32_to_bf16(float value);

}  // namespace gtpo::io
