// rl::rl_step, the one function the trainer and the bench call, and the micro-batch split of its update
// and of SFT: the normalisers span the whole (mini-)batch, so the budget changes only the order in which
// gradients are summed.
#include <catch2/catch.hpp>
#include <cmath>

#include "apps/run_setup.h"
#include "rl/evaluate.h"
#include "rl/policy_update.h"
#include "rl/rl_step.h"
#include "rl/run/trainer.h"
#include "rl/sft.h"
#include "tests/support/run_config.h"

using namespace gtpo;

namespace {
const std::string kConfig = testing::tiny_run_yaml({
    {"sampler.group_size", "4"},
    {"sampler.max_new_tokens", "12"},
    {"rl.algo", "gtpo"},
    {"rl.dynamic_sampling", "false"},
    // AdamW's first step is ~lr·sign(g) for eps << |g|; eps 1 keeps it ~lr·g, so rounding shows as rounding
    {"optim.eps", "1.0"},
    {"train.prompts_per_step", "4"},
    {"train.seed", "5"},
    {"sft.steps", "2"},
    {"sft.batch_size", "12"},
});

std::vector<std::vector<float>> weights(model::Transformer& m) {
  std::vector<std::vector<float>> out;
  for (const optim::Parameter& p : m.parameters()) out.push_back(p.tensor.to_vector());
  return out;
}

// Largest |a - b| relative to the largest |a| of the tensor, over every parameter.
double max_relative_difference(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  double worst = 0.0;
  for (size_t t = 0; t < a.size(); ++t) {
    double scale = 1e-12, diff = 0.0;
    for (size_t i = 0; i < a[t].size(); ++i) {
      scale = std::max(scale, std::fabs(static_cast<double>(a[t][i])));
      diff = std::max(diff, std::fabs(static_cast<double>(a[t][i]) - b[t][i]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// The change one step makes to a fresh model (same seed, so the same rollout batch) under
// rl.micro_batch_tokens = BUDGET, rl.group_by_length = GROUP and rl.share_prompts = SHARE.
std::vector<std::vector<float>> updated_weights(int64_t budget, bool group, rl::RlStepResult* first_step = nullptr,
                                                bool share = true) {
  rl::RunConfig c = rl::parse_run_config(kConfig, "test config");
  apps::RunObjects run = apps::build_run(c);
  const std::vector<std::vector<float>> before = weights(*run.model);
  optim::AdamW optimizer(run.model->parameters(), rl::adam_options(c.optim));
  const rl::RlStepModels models{*run.model, nullptr, optimizer, *run.tokenizer, *run.source, nullptr};
  uint64_t cursor = 0;
  c.rl.micro_batch_tokens = budget;
  c.rl.group_by_length = group;
  c.rl.share_prompts = share;
  rl::RlStepResult r = rl::rl_step(models, c, cursor, 1, 1e-2f);
  CHECK(r.update.optimizer_steps == 1);
  CHECK(r.update.tokens > 0);
  if (first_step) *first_step = std::move(r);
  std::vector<std::vector<float>> delta = weights(*run.model);
  for (size_t t = 0; t < delta.size(); ++t)
    for (size_t i = 0; i < delta[t].size(); ++i) delta[t][i] -= before[t][i];
  return delta;
}
}  // namespace

TEST_CASE("rl_step: one step's metrics and data, the same twice", "[rl][step]") {
  rl::RlStepResult a, b;
  const auto wa = updated_weights(0, true, &a);
  const auto wb = updated_weights(0, true, &b);
  CHECK(wa == wb);
  REQUIRE(a.batch.items.size() == 16);
  CHECK(a.batch.responses.size() == a.batch.items.size());
  for (size_t i = 0; i < a.batch.items.size(); ++i) {
    // The entropies moved into the response: one per generated token, none left behind in the sample.
    CHECK(a.batch.responses[i].entropies.size() == a.batch.items[i].sample.tokens.size());
    CHECK(a.batch.items[i].sample.entropies.empty());
  }
  CHECK(a.batch.groups().members.size() == 4);
  CHECK(a.metrics["step"] == 1);
  CHECK(a.metrics["groups_kept"] == 4);
  CHECK(a.metrics["loss_tokens"].get<int64_t>() == a.update.tokens);
  CHECK(a.metrics["loss"].get<double>() == b.metrics["loss"].get<double>());
}

TEST_CASE("rl_step: micro-batch budgets give the same update up to summation order", "[rl][step][micro-batch]") {
  const auto whole = updated_weights(0, false);
  // 16 sequences of at most ~30 tokens: 200 tokens gives a few micro-batches, 1 gives one per sequence;
  // -1 stands for no budget with grouping by length (the default), which cuts where padding costs most.
  for (int64_t budget : {int64_t{100000}, int64_t{200}, int64_t{1}, int64_t{-1}}) {
    INFO("rl.micro_batch_tokens=" << budget);
    const auto split = budget < 0 ? updated_weights(0, true) : updated_weights(budget, false);
    if (budget == 100000) {
      CHECK(split == whole);  // one micro-batch: the same computation, bit for bit
    } else {
      // Gradients of the micro-batches are summed in another order than one GEMM sums rows: float
      // round-off only, which shows in the weight change at the level of the weights' own rounding
      // (ulp of a weight ~1e-8 against a change of ~1e-4), so 1e-3 of the largest change.
      CHECK(max_relative_difference(whole, split) < 1e-3);
      CHECK(max_relative_difference(whole, split) > 0.0);  // the split really happened
    }
  }
}

TEST_CASE("rl_step: shared prompt rows give the padded batch's loss and its update up to summation order",
          "[rl][step][packed]") {
  rl::RlStepResult packed, padded;
  const auto shared = updated_weights(0, false, &packed, true);
  const auto full = updated_weights(0, false, &padded, false);
  // The log-probs are bitwise the padded forward's (tests/rl/test_packed_batch.cpp), and the loss adds the
  // same terms in the same order (the padded layout only adds zeros between them).
  CHECK(packed.metrics["loss"].get<double>() == padded.metrics["loss"].get<double>());
  CHECK(packed.metrics["entropy_mean"].get<double>() == padded.metrics["entropy_mean"].get<double>());
  CHECK(packed.metrics["loss_tokens"] == padded.metrics["loss_tokens"]);
  CHECK(packed.update.clip == padded.update.clip);
  // The gradient of a shared prompt row adds its group's terms before the weight gradients sum over rows.
  CHECK(max_relative_difference(full, shared) < 1e-3);
  CHECK(max_relative_difference(full, shared) > 0.0);
}

TEST_CASE("sft: micro-batch budgets give the same update up to summation order", "[rl][sft][micro-batch]") {
  auto train = [](int64_t budget, double* loss, bool group = false) {
    rl::RunConfig c = rl::parse_run_config(kConfig, "test config");
    c.sft.micro_batch_tokens = budget;
    c.sft.group_by_length = group;
    apps::RunObjects run = apps::build_run(c);
    uint64_t cursor = 0;
    rl::run_sft(*run.model, *run.tokenizer, *run.source, c, cursor, [&](const rl::SftStep& s) { *loss = s.loss; });
    return weights(*run.model);
  };
  double loss_whole = 0, loss_split = 0, loss_one = 0;
  const auto whole = train(0, &loss_whole);
  CHECK(train(1 << 20, &loss_one) == whole);  // one micro-batch: bit for bit
  CHECK(loss_one == loss_whole);
  const auto split = train(60, &loss_split);
  CHECK(loss_split == Approx(loss_whole).epsilon(1e-5));
  CHECK(max_relative_difference(whole, split) < 1e-4);
  CHECK(max_relative_difference(whole, split) > 0.0);
  double loss_grouped = 0;  // sft.group_by_length (the default): micro-batches of similar lengths
  const auto grouped = train(0, &loss_grouped, true);
  CHECK(loss_grouped == Approx(loss_whole).epsilon(1e-5));
  CHECK(max_relative_difference(whole, grouped) < 1e-4);
  CHECK(max_relative_difference(whole, grouped) > 0.0);
}

TEST_CASE("evaluate: sampled_problems samples only the first problems, greedy and their samples unchanged",
          "[rl][eval]") {
  rl::RunConfig c =
      rl::parse_run_config(kConfig, "test config", {{"eval.k", "3"}, {"eval.num_problems", "7"}});
  apps::RunObjects run = apps::build_run(c);
  rl::EvalOptions o = rl::eval_options(c);
  o.batch_prompts = 4;  // the sampled part ends inside the second batch
  const rl::EvalResult all = rl::evaluate(*run.model, *run.tokenizer, *run.source, o);
  o.sampled_problems = 5;
  const rl::EvalResult first = rl::evaluate(*run.model, *run.tokenizer, *run.source, o);
  CHECK(all.sampled_problems == 7);
  CHECK(first.sampled_problems == 5);
  CHECK(first.greedy_accuracy == all.greedy_accuracy);
  int64_t correct = 0;
  for (size_t i = 0; i < 7; ++i) {
    CHECK(first.records[i].greedy_completion == all.records[i].greedy_completion);
    if (i < 5) {
      CHECK(first.records[i].sample_completions == all.records[i].sample_completions);
      for (bool ok : first.records[i].sample_correct) correct += ok;
    } else {
      CHECK(first.records[i].sample_completions.empty());
    }
  }
  CHECK(first.mean_at_k == Approx(static_cast<double>(correct) / 15.0));
  o.k = 0;
  CHECK(rl::evaluate(*run.model, *run.tokenizer, *run.source, o).sampled_problems == 0);
}

TEST_CASE("evaluate: eval.k = 6 reports pass@1, 2, 4 and 6", "[rl][eval]") {
  rl::RunConfig c = rl::parse_run_config(kConfig, "test config", {{"eval.k", "6"}, {"eval.num_problems", "3"}});
  apps::RunObjects run = apps::build_run(c);
  const rl::EvalResult e = rl::evaluate(*run.model, *run.tokenizer, *run.source, rl::eval_options(c));
  std::vector<int64_t> ks;
  for (const auto& [k, value] : e.pass_at_k) {
    ks.push_back(k);
    CHECK(value >= 0.0);
    CHECK(value <= 1.0);
  }
  CHECK(ks == std::vector<int64_t>{1, 2, 4, 6});
}
