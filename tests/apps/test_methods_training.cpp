// Three RL steps of each method beside GTPO (rl/math/algorithms/) and of rl.rollout_correction, through
// rl::rl_step as the trainer calls it: the update runs, moves the weights, reports finite metrics, and a
// second run from the same seed is identical (Clip-Cov's random pick included).
#include <catch2/catch.hpp>
#include <cmath>

#include "apps/run_setup.h"
#include "rl/rl_step.h"
#include "rl/run/trainer.h"
#include "tests/support/run_config.h"

using namespace gtpo;

namespace {

// A length reward gives every group a spread of rewards, so every method has a gradient from the first step.
rl::RunConfig method_config(const std::string& algo, const testing::RunSettings& more = {}) {
  testing::RunSettings settings = {
      {"sampler.group_size", "4"},
      {"sampler.max_new_tokens", "12"},
      {"rl.algo", algo},
      {"reward.functions", "[{name: correct, weight: 1}, {name: length, weight: 1}]"},
      {"train.prompts_per_step", "3"},
      {"train.seed", "7"}};
  settings.insert(settings.end(), more.begin(), more.end());
  return rl::parse_run_config(testing::tiny_run_yaml(settings), "test config");
}

struct ThreeSteps {
  std::vector<nlohmann::json> metrics;
  std::vector<float> first_weights, last_weights;
};

ThreeSteps three_steps(rl::RunConfig c) {
  apps::RunObjects run = apps::build_run(c);
  optim::AdamW optimizer(run.model->parameters(), rl::adam_options(c.optim));
  const rl::RlStepModels models{*run.model, nullptr, optimizer, *run.tokenizer, *run.source, nullptr};
  ThreeSteps out;
  out.first_weights = run.model->parameters().begin()->tensor.to_vector();
  uint64_t cursor = 0;
  for (int64_t step = 1; step <= 3; ++step) {
    rl::RlStepResult r = rl::rl_step(models, c, cursor, step, 1e-2f);
    for (const char* timing : {"seconds_rollout", "seconds_advantages", "seconds_update",
                               "rollout_tokens_per_s", "update_tokens_per_s", "seconds_rewards"})
      r.metrics.erase(timing);
    out.metrics.push_back(r.metrics);
  }
  out.last_weights = run.model->parameters().begin()->tensor.to_vector();
  return out;
}

void check_trains(const ThreeSteps& a) {
  for (const nlohmann::json& m : a.metrics) {
    INFO(m.dump());
    CHECK(m.at("optimizer_steps") == 1);
    CHECK(m.at("loss_tokens").get<int64_t>() > 0);
    CHECK(std::isfinite(m.at("loss").get<double>()));
    CHECK(m.at("grad_norm").get<double>() > 0.0);
  }
  CHECK(a.first_weights != a.last_weights);
}

}  // namespace

TEST_CASE("methods: three steps of every new method train, deterministically", "[apps][methods]") {
  for (const std::string algo : {"reinforce_pp", "gspo", "cispo", "clip_cov", "kl_cov", "entropy_adv"}) {
    INFO(algo);
    // Clip-Cov's band is for 7B models' covariances; a tiny model's are smaller.
    const rl::RunConfig c = method_config(algo, {{"clip_cov.lb", "0"}, {"clip_cov.ratio", "0.05"}});
    const ThreeSteps a = three_steps(c), b = three_steps(c);
    check_trains(a);
    for (size_t s = 0; s < a.metrics.size(); ++s) CHECK(a.metrics[s].dump() == b.metrics[s].dump());
    CHECK(a.last_weights == b.last_weights);
    if (algo == "clip_cov" || algo == "kl_cov") {
      double selected = 0.0;
      for (const nlohmann::json& m : a.metrics) selected += m.at("cov_frac").get<double>();
      CHECK(selected > 0.0);
    } else {
      CHECK_FALSE(a.metrics[0].contains("cov_frac"));
    }
  }
}

TEST_CASE(
    "methods: with train.exact_decode the sampler's log-probs are the trainer's bit for bit, for every "
    "model family",
    "[apps][methods]") {
  // The decode step sums attention in the training forward's order (runtime/cpu/cpu_attention.cpp), so the
  // gap at each update, measured without a correction, is exactly zero: exactly on-policy.
  for (const std::string arch : {"gpt2", "llama", "qwen2"}) {
    INFO(arch);
    testing::RunSettings family = {{"model.architecture", arch}, {"train.exact_decode", "true"}};
    if (arch == "gpt2") family.emplace_back("model.num_key_value_heads", "4");
    for (const nlohmann::json& m : three_steps(method_config("grpo", family)).metrics) {
      CHECK(m.at("sampler_gap_max").get<double>() == 0.0);
      CHECK(m.at("sampler_gap_mean").get<double>() == 0.0);
      CHECK_FALSE(m.contains("correction_frac"));
    }
  }
}

TEST_CASE("methods: TIS and MIS score the rollout again, and on the CPU the sampler and trainer agree",
          "[apps][methods]") {
  const ThreeSteps plain = three_steps(method_config("grpo"));
  for (const nlohmann::json& m :
       plain.metrics) {  // the gap at the first update, measured without a correction
    CHECK(m.at("sampler_gap_max").get<double>() < 1e-4);
    CHECK(m.at("sampler_gap_mean").get<double>() <= m.at("sampler_gap_max").get<double>());
    CHECK_FALSE(m.contains("correction_frac"));
  }
  for (const std::string mode : {"tis", "mis"}) {
    INFO(mode);
    const ThreeSteps a = three_steps(method_config("grpo", {{"rl.rollout_correction", mode}}));
    check_trains(a);
    for (size_t s = 0; s < a.metrics.size(); ++s) {
      INFO("step " << s + 1);
      CHECK(a.metrics[s].at("sampler_gap_max").get<double>() < 1e-5);
      CHECK(a.metrics[s].at("correction_frac") == 0.0);
    }
  }
}

TEST_CASE("methods: dapo_forking's normalisers scale the same loss, and the random control trains",
          "[apps][methods]") {
  const ThreeSteps all = three_steps(
      method_config("dapo_forking", {{"rl.dynamic_sampling", "false"}, {"rl.mask_truncated", "false"}}));
  const ThreeSteps kept = three_steps(method_config(
      "dapo_forking",
      {{"rl.dynamic_sampling", "false"}, {"rl.mask_truncated", "false"}, {"dapo_forking.norm", "kept"}}));
  check_trains(all);
  check_trains(kept);
  // The first step samples before any update, so both see the same rollouts and keep the same tokens; the
  // paper's normaliser divides by every response token, `kept` by the kept ones only.
  const nlohmann::json &a = all.metrics[0], &k = kept.metrics[0];
  REQUIRE(a.at("loss_tokens") == k.at("loss_tokens"));
  // 3 prompts × 4 responses, none masked (no dynamic sampling, truncated responses stay in the loss).
  const double kept_tokens = a.at("loss_tokens").get<double>(),
               response_tokens = std::round(12 * a.at("response_length_mean").get<double>());
  REQUIRE(kept_tokens < response_tokens);
  CHECK(a.at("policy_loss").get<double>() ==
        Approx(k.at("policy_loss").get<double>() * kept_tokens / response_tokens).epsilon(1e-5));
  CHECK(all.last_weights != kept.last_weights);

  const rl::RunConfig random_config = method_config(
      "dapo_forking",
      {{"rl.dynamic_sampling", "false"}, {"rl.mask_truncated", "false"}, {"dapo_forking.select", "random"}});
  const ThreeSteps r1 = three_steps(random_config), r2 = three_steps(random_config);
  check_trains(r1);
  CHECK(r1.last_weights == r2.last_weights);
  CHECK(r1.metrics[0].at("loss_tokens") == static_cast<int64_t>(std::ceil(0.2 * response_tokens)));
  CHECK(r1.last_weights != all.last_weights);
}

TEST_CASE("methods: grad_clip_frac is the share of optimiser steps the gradient clip bound",
          "[apps][methods]") {
  const ThreeSteps bound = three_steps(method_config("grpo", {{"optim.grad_clip", "1e-6"}}));
  const ThreeSteps off = three_steps(method_config("grpo", {{"optim.grad_clip", "0"}}));
  const ThreeSteps loose = three_steps(method_config("grpo", {{"optim.grad_clip", "1e6"}}));
  for (size_t s = 0; s < 3; ++s) {
    CHECK(bound.metrics[s].at("grad_clip_frac") == 1.0);
    CHECK(off.metrics[s].at("grad_clip_frac") == 0.0);
    CHECK(loose.metrics[s].at("grad_clip_frac") == 0.0);
  }
  const ThreeSteps two =
      three_steps(method_config("grpo", {{"optim.grad_clip", "1e-6"}, {"rl.mini_batch_prompts", "2"}}));
  CHECK(two.metrics[0].at("optimizer_steps") == 2);
  CHECK(two.metrics[0].at("grad_clip_frac") == 1.0);
}
