// A training batch in which sequences share rows: a group's prompt is one set of rows that every response
// of the group reads, instead of a copy per sequence.
//
// Everything but attention works on a row alone (embeddings, norms, projections, the MLP, the head), so it
// runs once per distinct row. Attention needs each sequence's keys in order, so around it the rows are laid
// out as sequences, [rows, length] right-padded (gather_rows by slot_rows), and gathered back afterwards
// (one slot per row, row_slots). Because the CPU's per-row results do not depend on which other rows share
// a product, the logits are bitwise those of the padded batch; the gradients are the same sums added in
// another order (a shared row's gradient adds its sequences' terms before the weight gradients do).
#pragma once
#include <cstdint>

#include "runtime/tensor.h"

namespace gtpo::model {

struct PackedLayout {
  Tensor tokens;       // i32 [1, N]: the distinct rows
  Tensor positions;    // i32 [1, N]: each row's position in its sequences
  Tensor slot_rows;    // i32 [rows * length]: the row at each position of each sequence (past the end: any row)
  Tensor row_slots;    // i32 [N]: a slot holding each row, whose attention output the row takes
  Tensor output_rows;  // i32 [M]: the rows whose logits forward_packed returns, in this order
  // i32 [rows, 2] or undefined: the positions of each sequence whose attention output some row takes (a
  // shared prompt's later copies and the padding are read by no row), so that attention may skip the rest
  // (ops::attention's query_range) on backends that can.
  Tensor query_range;
  int64_t rows = 0;    // sequences
  int64_t length = 0;  // the longest sequence
};

}  // namespace gtpo::model
