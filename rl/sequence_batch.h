// Right-padded batches of token sequences for training forwards (SFT and policy updates).
// Causal attention never lets a real token see a later pad, so right padding needs no mask.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::rl {

struct PaddedBatch {
  Tensor tokens;            // i32 [rows, length]
  std::vector<int32_t> next;  // next[r * length + t] = token t + 1 of row r, or `pad` past the end
  int64_t rows = 0;
  int64_t length = 0;
  // Flat index (into rows * length) of the position that predicts token j of row r.
  int64_t predicting(int64_t row, int64_t j) const { return row * length + j - 1; }
};

// Consecutive ranges [first, last) of sequences whose padded size (count × longest) stays within
// TOKEN_BUDGET; a sequence longer than the budget is a range of its own. Budget 0 = one range of all.
std::vector<std::pair<std::size_t, std::size_t>> micro_batches(const std::vector<int64_t>& lengths,
                                                               int64_t token_budget);

PaddedBatch pad_right(const std::vector<std::vector<int32_t>>& sequences, int32_t pad, Device device);

}  // namespace gtpo::rl
