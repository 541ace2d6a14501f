#include "rl/sequence_batch.h"

#include <algorithm>

#include "runtime/error.h"

namespace gtpo::rl {

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
