// Micro-batch plans: every sequence exactly once, budgets kept, and grouping by length finds the cheapest
// cuts (checked against brute force over every cut of the sorted order).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/memory_estimate.h"
#include "rl/math/rl_config.h"
#include "rl/sequence_batch.h"

using namespace gtpo::rl;
using Plan = std::vector<std::vector<std::size_t>>;

namespace {

int64_t padded_tokens(const std::vector<int64_t>& lengths, const std::vector<std::size_t>& rows) {
  int64_t longest = 0;
  for (std::size_t i : rows) longest = std::max(longest, lengths[i]);
  return longest * static_cast<int64_t>(rows.size());
}

void check_partition(const Plan& plan, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& rows : plan) {
    CHECK(!rows.empty());
    for (std::size_t i : rows) {
      REQUIRE(i < n);
      seen[i]++;
    }
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<std::ptrdiff_t>(n));
}

// The cheapest cost over every way to cut the sorted order into runs (2^(n-1) of them), by enumeration.
int64_t brute_force_cost(std::vector<int64_t> sorted, const MicroBatchPlan& p) {
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  int64_t best = std::numeric_limits<int64_t>::max();
  for (uint32_t cuts = 0; cuts < (1u << (n - 1)); ++cuts) {
    int64_t cost = 0;
    std::size_t first = 0;
    bool ok = true;
    for (std::size_t j = 1; j <= n; ++j) {
      if (j < n && !(cuts & (1u << (j - 1)))) continue;
      const int64_t rows = static_cast<int64_t>(j - first), padded = rows * sorted[j - 1];
      if (p.token_budget > 0 && rows > 1 && padded > p.token_budget) ok = false;
      cost += padded + p.overhead_tokens;
      first = j;
    }
    if (ok) best = std::min(best, cost);
  }
  return best;
}

}  // namespace

TEST_CASE("micro-batches: in the given order, each as long as the budget allows") {
  const std::vector<int64_t> lengths{10, 30, 20, 50, 5, 5};
  const MicroBatchPlan in_order{100, false, 0};
  // 10+30 → 2×30 = 60; adding 20 → 3×30 = 90; adding 50 → 4×50 = 200 > 100: cut. 50 alone (+5 → 100 fits,
  // +5 → 150 does not).
  CHECK(plan_micro_batches(lengths, in_order) == Plan{{0, 1, 2}, {3, 4}, {5}});
  // A sequence longer than the budget is a micro-batch of its own.
  CHECK(plan_micro_batches({300, 10, 10}, in_order) == Plan{{0}, {1, 2}});
  // No budget, no grouping: the whole batch at once.
  CHECK(plan_micro_batches(lengths, {0, false, 64}) == Plan{{0, 1, 2, 3, 4, 5}});
  CHECK(plan_micro_batches({}, in_order).empty());
}

TEST_CASE("micro-batches: grouping by length cuts where padding costs more than a micro-batch") {
  // Two clusters, 4 of length 10 and 4 of length 100. One micro-batch pads to 8 × 100 = 800 tokens; two
  // cost 40 + 400 = 440 plus one more overhead.
  const std::vector<int64_t> lengths{100, 10, 100, 10, 10, 100, 10, 100};
  CHECK(plan_micro_batches(lengths, {0, true, 64}) == Plan{{1, 3, 4, 6}, {0, 2, 5, 7}});
  // When a micro-batch costs more than the padding it saves (360 tokens), one micro-batch is cheaper.
  CHECK(plan_micro_batches(lengths, {0, true, 400}) == Plan{{1, 3, 4, 6, 0, 2, 5, 7}});
  // Packed batches (slot_width > 0): a padded slot costs longest / slot_width tokens, since only attention
  // reads it. At 10,000: one micro-batch 8 × 100 × 0.01 = 8 + 64, two 40 × 0.001 + 4 + 128: one is cheaper.
  CHECK(plan_micro_batches(lengths, {0, true, 64, 10000}) == Plan{{1, 3, 4, 6, 0, 2, 5, 7}});
  // At 100 a slot of the long run costs a whole token: the padded plan's cut.
  CHECK(plan_micro_batches(lengths, {0, true, 64, 100}) == Plan{{1, 3, 4, 6}, {0, 2, 5, 7}});
  // Equal lengths keep their order (the sort is stable), and a tie goes to fewer micro-batches.
  CHECK(plan_micro_batches({7, 7, 7}, {0, true, 0}) == Plan{{0, 1, 2}});
  // The budget still bounds each micro-batch: 4 × 100 > 300.
  for (const auto& rows : plan_micro_batches(lengths, {300, true, 64}))
    CHECK(padded_tokens(lengths, rows) <= 300);
}

TEST_CASE(
    "micro-batches: grouping by length finds the cheapest cuts, and every plan covers each sequence once") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + rng() % 11;
    std::vector<int64_t> lengths(n);
    for (auto& l : lengths) l = 1 + static_cast<int64_t>(rng() % 60);
    const MicroBatchPlan p{static_cast<int64_t>(rng() % 3 == 0 ? 0 : 40 + rng() % 200), true,
                           static_cast<int64_t>(rng() % 100)};
    INFO("trial " << trial << ", budget " << p.token_budget << ", overhead " << p.overhead_tokens);
    const Plan plan = plan_micro_batches(lengths, p);
    check_partition(plan, n);
    int64_t cost = 0;
    for (const auto& rows : plan) {
      const int64_t padded = padded_tokens(lengths, rows);
      if (rows.size() > 1 && p.token_budget > 0) CHECK(padded <= p.token_budget);
      cost += padded + p.overhead_tokens;
    }
    CHECK(cost == brute_force_cost(lengths, p));
    check_partition(plan_micro_batches(lengths, {p.token_budget, false, 0}), n);
  }
}

namespace {
// A plan's cost as the planner prices it with shared prompts: padded slots at longest / slot_width tokens
// (or 1), overhead per micro-batch, and each micro-batch's distinct prompts' tokens.
double shared_prompt_cost(const std::vector<int64_t>& lengths, const Plan& plan, const MicroBatchPlan& p) {
  double cost = 0;
  for (const auto& rows : plan) {
    const int64_t padded = padded_tokens(lengths, rows);
    const int64_t longest = padded / static_cast<int64_t>(rows.size());
    cost += static_cast<double>(padded) *
                (p.slot_width > 0 ? static_cast<double>(longest) / static_cast<double>(p.slot_width) : 1.0) +
            static_cast<double>(p.overhead_tokens);
    std::vector<int64_t> seen;
    for (std::size_t i : rows)
      if (std::find(seen.begin(), seen.end(), p.prompt_ids[i]) == seen.end()) {
        seen.push_back(p.prompt_ids[i]);
        cost += static_cast<double>(p.prompt_lengths[i]);
      }
  }
  return cost;
}
}  // namespace

TEST_CASE("micro-batches: with shared prompts, a group of samples stays together where that is cheaper") {
  // Four prompts (20 tokens each) with four samples each; within every group the lengths are 60, 70, 80,
  // 90, so sorting by length alone puts one sample of every group in each micro-batch of four (a budget of
  // 4 x 90 = 360 padded tokens forces four), and every micro-batch computes all four prompts.
  std::vector<int64_t> lengths, ids, prompt_lengths;
  for (int64_t g = 0; g < 4; ++g)
    for (int64_t s = 0; s < 4; ++s) {
      lengths.push_back(60 + 10 * s);
      ids.push_back(g);
      prompt_lengths.push_back(20);
    }
  MicroBatchPlan shared{360, true, 64, 512};
  shared.prompt_ids = ids;
  shared.prompt_lengths = prompt_lengths;
  const Plan plan = plan_micro_batches(lengths, shared);
  CHECK(plan == Plan{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}});
  // Without the prompts' cost the cut is by length, each micro-batch holding one sample of every group.
  const Plan by_length = plan_micro_batches(lengths, {360, true, 64, 512});
  CHECK(by_length == Plan{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
  CHECK(shared_prompt_cost(lengths, plan, shared) < shared_prompt_cost(lengths, by_length, shared));
  // One micro-batch (no budget, cheap padding): the order by length, as without sharing (a tie keeps it).
  MicroBatchPlan one = shared;
  one.token_budget = 0;
  CHECK(plan_micro_batches(lengths, one) == plan_micro_batches(lengths, {0, true, 64, 512}));
}

TEST_CASE("micro-batches: pricing shared prompts never gives a plan that costs more than ignoring them") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = 1 + rng() % 24;
    std::vector<int64_t> lengths(n);
    for (auto& l : lengths) l = 5 + static_cast<int64_t>(rng() % 120);
    MicroBatchPlan p{static_cast<int64_t>(rng() % 3 == 0 ? 0 : 150 + rng() % 600), true,
                     static_cast<int64_t>(rng() % 100), rng() % 2 == 0 ? 0 : 512};
    const int64_t groups = 1 + static_cast<int64_t>(rng() % 5);
    for (std::size_t i = 0; i < n; ++i) {
      p.prompt_ids.push_back(static_cast<int64_t>(rng() % static_cast<uint32_t>(groups)));
      p.prompt_lengths.push_back(3 + p.prompt_ids.back() * 7);  // one length per prompt
    }
    INFO("trial " << trial << ", budget " << p.token_budget << ", overhead " << p.overhead_tokens);
    const Plan plan = plan_micro_batches(lengths, p);
    check_partition(plan, n);
    for (const auto& rows : plan)
      if (rows.size() > 1 && p.token_budget > 0) CHECK(padded_tokens(lengths, rows) <= p.token_budget);
    const Plan ignoring = plan_micro_batches(lengths, {p.token_budget, true, p.overhead_tokens, p.slot_width});
    CHECK(shared_prompt_cost(lengths, plan, p) <= shared_prompt_cost(lengths, ignoring, p) + 1e-9);
  }
}

TEST_CASE("micro-batches: prompt ids that do not match the sequences are an error") {
  MicroBatchPlan p{0, true, 64, 512};
  p.prompt_ids = {0, 1};
  p.prompt_lengths = {5, 5};
  CHECK_THROWS_WITH(plan_micro_batches({10, 20, 30}, p),
                    Catch::Matchers::Contains("2 prompt ids and 2 prompt lengths for 3 sequences"));
  p.prompt_ids = {0, -1, 1};
  p.prompt_lengths = {5, 5, 5};
  CHECK_THROWS_WITH(plan_micro_batches({10, 20, 30}, p), Catch::Matchers::Contains("negative prompt id -1"));
}

TEST_CASE("micro-batches: a negative budget is an error, not a silent default") {
  CHECK_THROWS_WITH(plan_micro_batches({1, 2}, {-1, true, 64}),
                    Catch::Matchers::Contains("negative token budget"));
}

TEST_CASE("micro-batches: the default budget follows the model's activation memory, and an explicit one wins") {
  gtpo::model::ModelConfig large;  // the larger TRL job's model (configs/bench-trl-large.yaml)
  large.hidden_size = 256;
  large.num_hidden_layers = 12;
  large.num_attention_heads = 8;
  large.num_key_value_heads = 4;
  large.intermediate_size = 704;
  large.vocab_size = 20;
  // Per layer 9 * 256 + 3 * 128 + 3 * 704 = 4800 floats; 12 layers and two vocabulary rows: 230,560 bytes.
  CHECK(gtpo::model::training_activation_bytes_per_token(large) == 230560.0);
  using gtpo::model::micro_batch_token_budget;
  const RlConfig rl;  // the defaults: micro_batch_tokens 0, micro_batch_memory_mb 512 (sft's too)
  CHECK(micro_batch_token_budget(rl.micro_batch_tokens, rl.micro_batch_memory_mb, large) == 2328);  // 512 MiB
  CHECK(micro_batch_token_budget(0, 1, large) == 4);
  CHECK(micro_batch_token_budget(1000, 512, large) == 1000);  // explicit tokens win
  CHECK(micro_batch_token_budget(0, 0, large) == 0);          // no bound at all

  gtpo::model::ModelConfig quick = large;  // the quick start's: its 128 x ~32-token batches are far below
  quick.hidden_size = 64;
  quick.num_hidden_layers = 2;
  quick.num_attention_heads = 4;
  quick.num_key_value_heads = 2;
  quick.intermediate_size = 192;
  CHECK(micro_batch_token_budget(0, 512, quick) == 52924);

  gtpo::model::ModelConfig huge = large;  // a budget below one sequence still lets one sequence through
  huge.vocab_size = 100000000;
  CHECK(micro_batch_token_budget(0, 512, huge) == 1);
  const Plan plan = plan_micro_batches({50, 60}, {micro_batch_token_budget(0, 512, huge), false});
  CHECK(plan.size() == 2);
}
