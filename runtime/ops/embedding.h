// Embedding lookup: rows of a [V, C] table gathered by i32 token ids.
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

// table [V, C] f32, ids i32 of any shape [...] -> [..., C]. Every id must lie in [0, V); ids are checked
// on the host before the kernel runs. Differentiable w.r.t. table only; the table gradient adds the rows
// of the output gradient in the order of the ids, so it is bitwise reproducible.
Tensor embedding(const Tensor& table, const Tensor& ids);

// Rows of x picked by index: x [N, ...] f32, index i32 [M] with entries in [0, N) (repeats allowed) ->
// [M, ...]. The embedding lookup with x as the table, so it is differentiable w.r.t. x: row n's gradient is
// the sum of the output-gradient rows that picked it, in index order (bitwise reproducible). A packed
// training batch uses it to lay shared rows out as sequences and back (model/packed_layout.h).
Tensor gather_rows(const Tensor& x, const Tensor& index);

}  // namespace gtpo::ops
