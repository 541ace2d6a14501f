// Right-padded batches of token sequences for training forwards (SFT and policy updates).
// Causal attention never lets a real token see a later pad, so right padding needs no mask.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "model/packed_layout.h"
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
  // 0: a padded slot costs a token (a padded batch computes it in full). > 0 (packed batches, where only
  // attention reads the padded layout, and its work per slot grows with the sequence): a slot costs
  // longest / slot_width tokens. Only read when grouping by length.
  int64_t slot_width = 0;
  // Packed batches with shared prompts (rl.share_prompts): sequence i's prompt is prompt_ids[i] (equal ids,
  // equal prompts: computed once per micro-batch), prompt_lengths[i] tokens long. A micro-batch then also
  // costs its distinct prompts' tokens, so cuts that split a group of samples pay for its prompt again.
  // Empty: no sharing. Only read when grouping by length.
  std::vector<int64_t> prompt_ids{}, prompt_lengths{};
};

// slot_width for packed batches: 512 keeps the quick start (30-token sequences) one micro-batch, where 256
// still cut it in two, and still cuts the long-reasoning study (64-240 tokens) by length, docs/performance.md.
constexpr int64_t kPackedSlotWidth = 512;

// The micro-batches of sequences of these LENGTHS, as lists of indices into LENGTHS. A sequence longer
// than the budget is a micro-batch of its own.
//  - Without grouping: consecutive runs in the given order, each as long as the budget allows.
//  - Grouping by length: the indices sorted by length (ties in the given order), cut into consecutive
//    runs that minimise the padded tokens plus overhead_tokens per run (plus the distinct prompts' tokens
//    when prompts are shared), within the budget. With shared prompts a second order is cut the same way,
//    each prompt's sequences together (prompts by their longest sequence, then by first appearance;
//    within one, by length), and the cheaper plan is taken (on a tie, the one by length): sorting by
//    length alone scattered each group of samples over every micro-batch, so its prompt was computed in
//    each. The plan is a pure function of its inputs, so every rank and every rerun cuts the same way.
// overhead_tokens for a device: on the CPU a micro-batch's fixed cost (≈ 30 ops' parallel regions and
// allocations forward and backward) is worth a few dozen padded tokens of a small model (16, 64 and 256
// measured alike, 1,024 worse: docs/performance.md, "Profile of the update by wall time"); on a GPU it is
// kernel launches against near-free tokens, so cuts must save far more padding to pay (a guess: never
// measured on a GPU).
int64_t micro_batch_overhead_tokens(Device device);

std::vector<std::vector<std::size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                         const MicroBatchPlan& plan);

PaddedBatch pad_right(const std::vector<std::vector<int32_t>>& sequences, int32_t pad, Device device);

// Prompt-then-response sequences packed so that equal prompts are one set of rows (model/packed_layout.h).
// A response's last token predicts nothing, so it is not fed; the logits are those that predict the
// response tokens, sequence by sequence. The attention layout is pad_right's [sequences, longest].
struct SharedPromptBatch {
  model::PackedLayout layout;
  std::vector<int32_t> targets;         // [M]: every response token, sequence by sequence
  std::vector<int64_t> response_begin;  // sequence s's tokens are targets [response_begin[s], + its length)
  int64_t distinct_prompts = 0;
};

// Every prompt and every response must be non-empty. Rows are laid out in sequence order: a prompt's rows
// where it first appears, then each response's.
SharedPromptBatch pack_shared_prompts(const std::vector<std::span<const int32_t>>& prompts,
                                      const std::vector<std::span<const int32_t>>& responses, Device device);

}  // namespace gtpo::rl
