// Embedding lookup: rows of a [V, C] table gathered by i32 token ids.
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

// table [V, C] f32, ids i32 of any shape [...] -> [..., C]. Every id must lie in [0, V); ids are checked
// on the host before the kernel runs. Differentiable w.r.t. table only; the table gradient adds the rows
// of the output gradient in the order of the ids, so it is bitwise reproducible.
Tensor embedding(const Tensor& table, const Tensor& ids);

}  // namespace gtpo::ops
