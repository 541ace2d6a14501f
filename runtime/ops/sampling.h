// Token choice: the sampler's draw of one token per row of logits, on the logits' device.
#pragma once
#include <vector>

#include "runtime/backend.h"
#include "runtime/tensor.h"

namespace gtpo::ops {

// ids [rows] (i32, on logits' device): row r's token from logits [rows, vocab] (f32) with the uniform
// uniforms[r] in [0, 1), as runtime/token_choice.h defines it. Every backend gives the same ids from the same
// logits. Not differentiable. uniforms may be empty when args.temperature is 0.
Tensor choose_tokens(const Tensor& logits, const std::vector<double>& uniforms, const TokenChoiceArgs& args);

}  // namespace gtpo::ops
