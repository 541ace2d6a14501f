#include "rl/sequence_batch.h"

#include <algorithm>

#include "runtime/error.h"

namespace gtpo::rl {

std::vector<std::pair<std::size_t, std::size_t>> micro_batches(const std::vector<int64_t>& lengths,
                                                               int64_t token_budget) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  std::size_t first = 0;
  int64_t longest = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const int64_t grown = std::max(longest, lengths[i]);
    if (token_budget > 0 && i > first && grown * static_cast<int64_t>(i + 1 - first) > token_budget) {
      ranges.emplace_back(first, i);
      first = i;
      longest = lengths[i];
    } else {
      longest = grown;
    }
  }
  if (first < lengths.size()) ranges.emplace_back(first, lengths.size());
  return ranges;
}

PaddedBatch pad_right(const std::vector<std::vector<int32_t>>& sequences, int32_t pad, Device device) {
  GTPO_CHECK(!sequences.empty(), "pad_right: no sequences");
  PaddedBatch b;
  b.rows = static_cast<int64_t>(sequences.size());
  for (const auto& s : sequences) b.length = std::max<int64_t>(b.length, static_cast<int64_t>(s.size()));
  GTPO_CHECK(b.length > 0, "pad_right: all sequences are empty");
  std::vector<int32_t> tokens(static_cast<size_t>(b.rows * b.length), pad);
  b.next.assign(tokens.size(), pad);
  for (int64_t r = 0; r < b.rows; ++r) {
    const auto& s = sequences[static_cast<size_t>(r)];
    for (size_t t = 0; t < s.size(); ++t) {
      tokens[static_cast<size_t>(r * b.length) + t] = s[t];
      if (t > 0) b.next[static_cast<size_t>(r * b.length) + t - 1] = s[t];
    }
  }
  b.tokens = Tensor::from_ints(tokens, {b.rows, b.length}, device);
  return b;
}

}  // namespace gtpo::rl
