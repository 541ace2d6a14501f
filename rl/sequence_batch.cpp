#include "rl/sequence_batch.h"

#include <algorithm>
#include <limits>
#include <map>

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

struct Cuts {
  std::vector<std::vector<std::size_t>> runs;
  double cost = 0;
};

// The cheapest cuts of ORDER (the sequences in the order they are to be run) into consecutive runs within
// the budget, by a shortest path over cut points: cost[j] = min over i of cost[i] + the run order[i, j)'s
// cost, which is its padded slots (rows × its longest) at w tokens each (1, or longest / slot_width for
// packed batches), plus overhead, plus its distinct prompts' tokens when prompts are shared. Growing a run
// backwards from j only adds rows and length, so the budget ends the inner loop. O(n²) in the worst case
// (no budget), a few milliseconds for thousands of sequences.
Cuts cheapest_cuts(const std::vector<std::size_t>& order, const std::vector<int64_t>& lengths,
                   const MicroBatchPlan& plan) {
  const std::size_t n = order.size();
  const bool shared = !plan.prompt_ids.empty();
  std::vector<double> cost(n + 1, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> cut(n + 1, 0);
  // seen_in[p] == j: prompt p is already counted in the run ending at j being grown.
  int64_t prompts = 0;
  for (int64_t id : plan.prompt_ids) prompts = std::max(prompts, id + 1);
  std::vector<std::size_t> seen_in(static_cast<std::size_t>(prompts), 0);
  cost[0] = 0;
  for (std::size_t j = 1; j <= n; ++j) {
    int64_t longest = 0;
    double prompt_tokens = 0;
    for (std::size_t i = j; i-- > 0;) {
      const std::size_t s = order[i];
      longest = std::max(longest, lengths[s]);
      const int64_t rows = static_cast<int64_t>(j - i);
      if (!within_budget(rows, longest, plan.token_budget)) break;  // longer runs only grow
      if (shared && seen_in[static_cast<std::size_t>(plan.prompt_ids[s])] != j) {
        seen_in[static_cast<std::size_t>(plan.prompt_ids[s])] = j;
        prompt_tokens += static_cast<double>(plan.prompt_lengths[s]);
      }
      const double slot_cost =
          plan.slot_width > 0 ? static_cast<double>(longest) / static_cast<double>(plan.slot_width) : 1.0;
      const double c = cost[i] + static_cast<double>(rows * longest) * slot_cost +
                       static_cast<double>(plan.overhead_tokens) + prompt_tokens;
      if (c <= cost[j]) {  // on a tie, the longer run: fewer micro-batches
        cost[j] = c;
        cut[j] = i;
      }
    }
  }
  Cuts best;
  best.cost = cost[n];
  for (std::size_t j = n; j > 0; j = cut[j])
    best.runs.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(cut[j]),
                           order.begin() + static_cast<std::ptrdiff_t>(j));
  std::reverse(best.runs.begin(), best.runs.end());
  return best;
}

std::vector<std::vector<std::size_t>> runs_by_length(const std::vector<int64_t>& lengths,
                                                     const MicroBatchPlan& plan) {
  const std::size_t n = lengths.size();
  std::vector<std::size_t> by_length(n);
  for (std::size_t i = 0; i < n; ++i) by_length[i] = i;
  std::stable_sort(by_length.begin(), by_length.end(),
                   [&](std::size_t a, std::size_t b) { return lengths[a] < lengths[b]; });
  Cuts best = cheapest_cuts(by_length, lengths, plan);
  if (plan.prompt_ids.empty()) return best.runs;
  // Each prompt's sequences together: prompts by their longest sequence, then by first appearance.
  std::map<int64_t, std::pair<int64_t, std::size_t>> prompt_key;  // id -> (longest, first index)
  for (std::size_t i = 0; i < n; ++i) {
    auto [it, fresh] = prompt_key.try_emplace(plan.prompt_ids[i], lengths[i], i);
    if (!fresh) it->second.first = std::max(it->second.first, lengths[i]);
  }
  std::vector<std::size_t> by_prompt = by_length;  // within a prompt: by length, ties in the given order
  std::stable_sort(by_prompt.begin(), by_prompt.end(), [&](std::size_t a, std::size_t b) {
    return prompt_key.at(plan.prompt_ids[a]) < prompt_key.at(plan.prompt_ids[b]);
  });
  Cuts together = cheapest_cuts(by_prompt, lengths, plan);
  return together.cost < best.cost ? together.runs : best.runs;
}

}  // namespace

int64_t micro_batch_overhead_tokens(Device device) { return device == Device::cuda ? 2048 : 64; }

std::vector<std::vector<std::size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                         const MicroBatchPlan& plan) {
  GTPO_CHECK(plan.token_budget >= 0, "micro-batches: negative token budget ", plan.token_budget);
  GTPO_CHECK(plan.overhead_tokens >= 0, "micro-batches: negative overhead ", plan.overhead_tokens);
  GTPO_CHECK(plan.prompt_ids.empty() ||
                 (plan.prompt_ids.size() == lengths.size() && plan.prompt_lengths.size() == lengths.size()),
             "micro-batches: ", plan.prompt_ids.size(), " prompt ids and ", plan.prompt_lengths.size(),
             " prompt lengths for ", lengths.size(), " sequences");
  for (int64_t id : plan.prompt_ids) GTPO_CHECK(id >= 0, "micro-batches: negative prompt id ", id);
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

SharedPromptBatch pack_shared_prompts(const std::vector<std::span<const int32_t>>& prompts,
                                      const std::vector<std::span<const int32_t>>& responses, Device device) {
  GTPO_CHECK(!prompts.empty() && prompts.size() == responses.size(), "pack_shared_prompts: ", prompts.size(),
             " prompts for ", responses.size(), " responses");
  const size_t S = prompts.size();
  SharedPromptBatch b;
  model::PackedLayout& l = b.layout;
  l.rows = static_cast<int64_t>(S);
  for (size_t s = 0; s < S; ++s) {
    GTPO_CHECK(!prompts[s].empty() && !responses[s].empty(), "pack_shared_prompts: sequence ", s, " has ",
               prompts[s].size(), " prompt and ", responses[s].size(), " response tokens (both must be > 0)");
    // pad_right's length, though no sequence fills it: attention then runs on exactly the padded batch's
    // shape, and so takes the same path and tiles (model/packed_layout.h: the same logits).
    l.length = std::max<int64_t>(l.length, static_cast<int64_t>(prompts[s].size() + responses[s].size()));
  }
  std::vector<int32_t> tokens, positions, slot_rows(S * static_cast<size_t>(l.length), 0), row_slots, output_rows;
  std::vector<int32_t> query_range;
  std::map<std::vector<int32_t>, int32_t> prompt_row;  // a prompt's first row
  auto add_row = [&](int32_t token, int64_t position, int64_t slot) {
    tokens.push_back(token);
    positions.push_back(static_cast<int32_t>(position));
    row_slots.push_back(static_cast<int32_t>(slot));
    return static_cast<int32_t>(tokens.size() - 1);
  };
  for (size_t s = 0; s < S; ++s) {
    const std::span<const int32_t> prompt = prompts[s], response = responses[s];
    const int64_t p = static_cast<int64_t>(prompt.size()), slot0 = static_cast<int64_t>(s) * l.length;
    auto [it, fresh] = prompt_row.try_emplace(std::vector<int32_t>(prompt.begin(), prompt.end()), 0);
    if (fresh) {
      it->second = static_cast<int32_t>(tokens.size());
      for (int64_t t = 0; t < p; ++t) add_row(prompt[static_cast<size_t>(t)], t, slot0 + t);
    }
    const int32_t first_prompt_row = it->second;
    // Rows take their attention output from the slots they were added at: this sequence's prompt slots
    // only when the prompt is new here, its response slots always (its last token is not fed).
    query_range.push_back(fresh ? 0 : static_cast<int32_t>(p));
    query_range.push_back(static_cast<int32_t>(p + static_cast<int64_t>(response.size()) - 1));
    for (int64_t t = 0; t < p; ++t) slot_rows[static_cast<size_t>(slot0 + t)] = first_prompt_row + static_cast<int32_t>(t);
    b.response_begin.push_back(static_cast<int64_t>(b.targets.size()));
    output_rows.push_back(first_prompt_row + static_cast<int32_t>(p - 1));  // the prompt's last row predicts token 0
    b.targets.push_back(response[0]);
    for (size_t j = 1; j < response.size(); ++j) {
      const int64_t slot = slot0 + p + static_cast<int64_t>(j) - 1;
      const int32_t row = add_row(response[j - 1], p + static_cast<int64_t>(j) - 1, slot);
      slot_rows[static_cast<size_t>(slot)] = row;
      output_rows.push_back(row);
      b.targets.push_back(response[j]);
    }
  }
  b.distinct_prompts = static_cast<int64_t>(prompt_row.size());
  const int64_t N = static_cast<int64_t>(tokens.size());
  l.tokens = Tensor::from_ints(tokens, {1, N}, device);
  l.positions = Tensor::from_ints(positions, {1, N}, device);
  l.slot_rows = Tensor::from_ints(slot_rows, {static_cast<int64_t>(slot_rows.size())}, device);
  l.row_slots = Tensor::from_ints(row_slots, {N}, device);
  l.output_rows = Tensor::from_ints(output_rows, {static_cast<int64_t>(output_rows.size())}, device);
  l.query_range = Tensor::from_ints(query_range, {l.rows, 2}, device);
  return b;
}

}  // namespace gtpo::rl
