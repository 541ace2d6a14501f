#include "rl/sequence_batch.h"

#include <algorithm>
#include <limits>

#include "runtime/error.h"

namespace gtpo::rl {

namespace {

bool within_budget(int64_t rows, int64_t longest, int64_t budget) {
  return budget <= 0 || rows == 1 || rows * longest <= budget;
}

std::vector<std::vector<std::size_t>> consecutive_runs(const std::vector<int64_t>& lengths, int64_t budget) {
  std::vector<std::vector<std::size_t>> runs;
  int64_t longest = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const int64_t grown = std::max(longest, lengths[i]);
    if (runs.empty() || !within_budget(static_cast<int64_t>(runs.back().size()) + 1, grown, budget)) {
      runs.emplace_back();
      longest = lengths[i];
    } else {
      longest = grown;
    }
    runs.back().push_back(i);
  }
  return runs;
}

// Sorted lengths make a run's padded size (count × its last length) known for any cut, so the cheapest
// cuts come from a shortest-path over cut points: cost[j] = min over i of cost[i] + (j − i)·len[j − 1] +
// overhead. O(n²) in the worst case (no budget), a few milliseconds for thousands of sequences.
std::vector<std::vector<std::size_t>> runs_by_length(const std::vector<int64_t>& lengths,
                                                     const MicroBatchPlan& plan) {
  const std::size_t n = lengths.size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
  std::vector<int64_t> cost(n + 1, std::numeric_limits<int64_t>::max());
  std::vector<std::size_t> cut(n + 1, 0);
  cost[0] = 0;
  for (std::size_t j = 1; j <= n; ++j) {
    const int64_t longest = lengths[order[j - 1]];
    for (std::size_t i = j; i-- > 0;) {
      const int64_t rows = static_cast<int64_t>(j - i);
      if (!within_budget(rows, longest, plan.token_budget)) break;  // longer runs only grow
      const int64_t c = cost[i] + rows * longest + plan.overhead_tokens;
      if (c <= cost[j]) {  // on a tie, the longer run: fewer micro-batches
        cost[j] = c;
        cut[j] = i;
      }
    }
  }
  std::vector<std::vector<std::size_t>> runs;
  for (std::size_t j = n; j > 0; j = cut[j])
    runs.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(cut[j]),
                      order.begin() + static_cast<std::ptrdiff_t>(j));
  std::reverse(runs.begin(), runs.end());
  return runs;
}

}  // namespace

int64_t micro_batch_overhead_tokens(Device device) { return device == Device::cuda ? 2048 : 64; }

std::vector<std::vector<std::size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                         const MicroBatchPlan& plan) {
  GTPO_CHECK(plan.token_budget >= 0, "micro-batches: negative token budget ", plan.token_budget);
  GTPO_CHECK(plan.overhead_tokens >= 0, "micro-batches: negative overhead ", plan.overhead_tokens);
  if (lengths.empty()) return {};
  return plan.group_by_length ? runs_by_length(lengths, plan) : consecutive_runs(lengths, plan.token_budget);
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
