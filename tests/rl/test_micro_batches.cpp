// Micro-batch plans: every sequence exactly once, budgets kept, and grouping by length finds the cheapest
// cuts (checked against brute force over every cut of the sorted order).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "model/memory_estimate.h"
#include "rl/rl_config.h"
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
