// Right-padded batches of token sequences for training forwards (SFT and policy updates).
// Causal attention never lets a real token see a later pad, so right padding needs no mask.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::rl {

struct PaddedBatch {
  Tensor tokens;              // i32 [rows, length]
  std::vector<int32_t> next;  // next[r * length + t] = token t + 1 of row r, or `pad` past the end
  int64_t rows = 0;
  int64_t length = 0;
  // Flat index (into rows * length) of the position that predicts token j of row r.
  int64_t predicting(int64_t row, int64_t j) const { return row * length + j - 1; }
};

// How a batch of sequences is cut into micro-batches (each one forward/backward, right-padded to its own
// longest sequence).
struct MicroBatchPlan {
  int64_t token_budget = 0;     // most padded tokens (rows × longest) of one micro-batch; 0 = no bound
  bool group_by_length = true;  // sort by length and cut where padding would cost more than a micro-batch
  // What one more micro-batch costs, in padded tokens' worth of work (its fixed per-op cost); only read
  // when grouping by length.
  int64_t overhead_tokens = 64;
};

// The micro-batches of sequences of these LENGTHS, as lists of indices into LENGTHS. A sequence longer
// than the budget is a micro-batch of its own.
//  - Without grouping: consecutive runs in the given order, each as long as the budget allows.
//  - Grouping by length: the indices sorted by length (ties in the given order), cut into consecutive
//    runs that minimise the padded tokens plus overhead_tokens per run, within the budget. The plan is a
//    pure function of the lengths, so every rank and every rerun cuts the same way.
// overhead_tokens for a device: on the CPU a micro-batch's fixed cost (≈ 30 ops' parallel regions and
// allocations forward and backward) is worth a few dozen padded tokens of a small model (16, 64 and 256
// measured alike, 1,024 worse: docs/performance.md, "Profile of the update by wall time"); on a GPU it is
// kernel launches against near-free tokens, so cuts must save far more padding to pay (a guess: never
// measured on a GPU).
int64_t micro_batch_overhead_tokens(Device device);

std::vector<std::vector<std::size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                         const MicroBatchPlan& plan);

PaddedBatch pad_right(const std::vector<std::vector<int32_t>>& sequences, int32_t pad, Device device);

}  // namespace gtpo::rl
