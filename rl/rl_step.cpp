#include "rl/rl_step.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "rl/distillation.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/diagnostics.h"
#include "rl/non_finite.h"
#include "runtime/backend.h"
#include "runtime/random.h"

namespace gtpo::rl {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The metrics measured over kept responses or by the update.
constexpr const char* kKeptOrUpdateMetrics[] = {"reward_mean",
                                                "reward_std",
                                                "response_length_mean",
                                                "response_length_max",
                                                "truncated_frac",
                                                "entropy_mean",
                                                "frac_correct_negative_adv",
                                                "frac_incorrect_positive_adv",
                                                "loss",
                                                "policy_loss",
                                                "kl_loss",
                                                "clip_frac_low",
                                                "clip_frac_high",
                                                "approx_kl",
                                                "policy_entropy",
                                                "ratio_mean",
                                                "ratio_max",
                                                "grad_norm",
                                                "grad_clip_frac",
                                                "update_tokens_per_s"};

nlohmann::json step_metrics(int64_t step, float lr, const RlStepResult& r, const RewardSection& rewards) {
  const RolloutBatch& batch = r.batch;
  double reward_sum = 0, reward_sq = 0, len_sum = 0, len_max = 0, truncated = 0, ent_sum = 0, ent_n = 0;
  for (std::size_t i = 0; i < batch.items.size(); ++i) {
    const RolloutItem& it = batch.items[i];
    const double reward = it.reward.total;  // c_i without reward functions
    reward_sum += reward;
    reward_sq += reward * reward;
    len_sum += static_cast<double>(it.sample.tokens.size());
    len_max = std::max(len_max, static_cast<double>(it.sample.tokens.size()));
    truncated += it.truncated;
    for (float h : batch.responses[i].entropies) ent_sum += h, ent_n += 1;
  }
  const double n_items = std::max<double>(1.0, static_cast<double>(batch.items.size()));
  const double reward_mean = reward_sum / n_items;
  const Diagnostics& d = r.advantages.diagnostics;
  const UpdateStats& up = r.update;
  nlohmann::json m = {
      {"step", step},
      {"lr", lr},
      {"accuracy",
       batch.sampled_responses ? static_cast<double>(batch.sampled_correct) / batch.sampled_responses : 0.0},
      {"reward_mean", reward_mean},
      {"reward_std", std::sqrt(std::max(0.0, reward_sq / n_items - reward_mean * reward_mean))},
      {"response_length_mean", len_sum / n_items},
      {"response_length_max", len_max},
      {"truncated_frac", truncated / n_items},
      {"entropy_mean", ent_n > 0 ? ent_sum / ent_n : 0.0},
      {"groups_sampled", batch.sampled_groups},
      {"groups_kept", batch.kept_groups},
      {"dropped_frac",
       batch.sampled_groups ? 1.0 - static_cast<double>(batch.kept_groups) / batch.sampled_groups : 0.0},
      {"resample_rounds", batch.rounds},
      {"frac_correct_negative_adv", d.frac_correct_negative},
      {"frac_incorrect_positive_adv", d.frac_incorrect_positive},
      {"entropy_adv_corr",
       std::isnan(d.entropy_adv_corr) ? nlohmann::json() : nlohmann::json(d.entropy_adv_corr)},
      {"overlong_penalised", d.overlong_penalised},
      {"loss", up.loss.loss},
      {"policy_loss", up.loss.policy_loss},
      {"kl_loss", up.loss.kl_loss},
      {"clip_frac_low", up.loss.clip_frac_low},
      {"clip_frac_high", up.loss.clip_frac_high},
      {"approx_kl", up.loss.approx_kl},
      {"policy_entropy", up.loss.entropy_mean},
      {"ratio_mean", up.loss.ratio_mean},
      {"ratio_max", up.loss.ratio_max},
      {"grad_norm", up.grad_norm},
      {"grad_clip_frac", up.grad_clip_frac},
      {"optimizer_steps", up.optimizer_steps},
      {"loss_tokens", up.tokens},
      {"rollout_tokens_per_s", batch.sampler.generated_tokens / std::max(r.seconds_rollout, 1e-9)},
      {"update_tokens_per_s", up.tokens / std::max(r.seconds_update, 1e-9)},
      {"seconds_rollout", r.seconds_rollout},
      {"seconds_advantages", r.seconds_advantages},
      {"seconds_update", r.seconds_update},
  };
  // No kept group: nothing measured over kept responses and no update; a 0 would read as a value.
  if (batch.items.empty())
    for (const char* key : kKeptOrUpdateMetrics) m[key] = nullptr;
  if (has_reward_functions(rewards)) {  // rewards/NAME/mean, /std (and components) over every sampled response
    std::vector<const RewardOutcome*> outcomes;
    for (const RewardOutcome& o : batch.sampled_rewards) outcomes.push_back(&o);
    m.update(reward_metrics(reward_functions(rewards), outcomes));
    m["seconds_rewards"] = batch.seconds_rewards;  // part of seconds_rollout
  }
  return m;
}

}  // namespace

UpdateOptions update_options(const RunConfig& config, const model::SamplingOptions& sampling, float lr,
                             int64_t step) {
  UpdateOptions uo;
  uo.temperature = sampling.temperature > 0.0f ? sampling.temperature : 1.0f;  // log-probs as sampled
  uo.grad_clip = static_cast<float>(config.optim.grad_clip);
  uo.lr = lr;
  uo.pad_id = sampling.pad_id;
  uo.seed = config.train.seed * 0x100000001B3ull + static_cast<uint64_t>(step);
  return uo;
}

BatchContext advantage_context(const RunConfig& config, const RolloutBatch& batch, const Grouping& groups,
                               int64_t step) {
  BatchContext context;
  context.max_new_tokens = static_cast<int>(config.sampler.max_new_tokens);
  context.groups = &groups;
  context.groups_filtered = true;  // the rollout phase kept only informative groups (or every group)
  context.token_gamma = config.reward.token_gamma;
  context.seed = counter_hash(config.train.seed, static_cast<uint64_t>(step), name_hash("advantages"));
  const auto dense = [](const RolloutItem& it) { return !it.reward.token_rewards.empty(); };
  if (std::any_of(batch.items.begin(), batch.items.end(), dense))  // a function gives token rewards
    for (const RolloutItem& it : batch.items) context.token_rewards.push_back(&it.reward.token_rewards);
  return context;
}

RlStepResult rl_step(const RlStepModels& m, const RunConfig& config, uint64_t& cursor, int64_t step, float lr,
                     std::optional<double> entropy_coef) {
  RlStepResult r;
  RlConfig adapted;  // a copy only with an adaptive entropy coefficient
  if (entropy_coef) {
    adapted = config.rl;
    adapted.entropy_coef = *entropy_coef;
  }
  const RlConfig& update_rl = entropy_coef ? adapted : config.rl;
  const model::SamplingOptions sampling = sampling_options(config.sampler, m.tokenizer, config.train.seed);

  std::unique_ptr<RewardRunner> own_rewards;
  RewardRunner* rewards = m.rewards;
  if (rewards == nullptr) {
    own_rewards = std::make_unique<RewardRunner>(config.reward, config.sampler);
    rewards = own_rewards.get();
  }

  auto t = Clock::now();
  r.batch = collect_rollouts(m.policy, m.tokenizer, m.source, cursor, config.train.prompts_per_step, sampling,
                             config.rl, rewards, step, m.comm);
  r.seconds_rollout = seconds_since(t);
  for (const RolloutItem& item : r.batch.items)  // a diverged policy samples from NaN logits: stop here
    for (float lp : item.sample.logprobs) check_finite(lp, "rl", step, "log-probability of a sampled token");
  for (const Response& response : r.batch.responses)
    for (float e : response.entropies) check_finite(e, "rl", step, "entropy of a sampled token");
  DistillationStats distillation;
  if (m.teacher) {  // every rank scores the whole gathered batch, so every rank holds the same rewards
    distillation = add_teacher_rewards(*m.teacher, m.policy, config.teacher.weight, r.batch);
    r.seconds_teacher = distillation.seconds;
    for (const RolloutItem& item : r.batch.items)
      for (float lp : item.teacher_logprobs)
        check_finite(lp, "rl", step, "teacher log-probability of a token");
  }

  t = Clock::now();
  const Grouping groups = r.batch.groups();
  const BatchContext context = advantage_context(config, r.batch, groups, step);
  // Every rank holds the whole batch (gathered by the rollout phase), so group and batch scopes (rl.*,
  // gtpo.scope) are computed on it unchanged, identically on every rank.
  r.advantages = compute_advantages(r.batch.responses, config.rl, context);
  r.seconds_advantages = seconds_since(t);

  t = Clock::now();
  r.update = run_policy_update(m.policy, m.optimizer, r.batch, r.advantages, update_rl,
                               update_options(config, sampling, lr, step), m.reference, m.comm);
  backend_for(m.policy.device()).synchronize();  // the optimiser's kernels may still be queued on a GPU
  r.seconds_update = seconds_since(t);

  r.metrics = step_metrics(step, lr, r, config.reward);
  std::vector<std::vector<float>> old_logprobs;  // a copy per step: small next to the rollout itself
  for (const RolloutItem& it : r.batch.items) old_logprobs.push_back(it.sample.logprobs);
  const double cov = logprob_advantage_covariance(old_logprobs, r.advantages.responses);
  r.metrics["logprob_adv_cov"] = std::isnan(cov) ? nlohmann::json() : nlohmann::json(cov);
  if (active_policy_loss(config.rl).select != nullptr)  // the share of tokens it treated apart
    r.metrics["cov_frac"] = r.update.loss.cov_frac;
  if (entropy_coef) r.metrics["entropy_coef"] = *entropy_coef;  // the coefficient this step's update used
  if (m.teacher) r.metrics.update(distillation_metrics(distillation));
  r.metrics["sampler_gap_max"] = r.update.sampler_gap_max;
  r.metrics["sampler_gap_mean"] = r.update.sampler_gap_mean;
  if (config.rl.rollout_correction != RolloutCorrection::None)
    r.metrics["correction_frac"] = r.update.correction_frac;
  if (m.comm.size() > 1) {  // what the optimiser steps cost this rank (rank 0 writes the metrics)
    const double steps = static_cast<double>(std::max<int64_t>(r.update.optimizer_steps, 1));
    r.metrics["dist_bytes_sent"] = static_cast<double>(r.update.traffic.sent) / steps;
    r.metrics["dist_bytes_received"] = static_cast<double>(r.update.traffic.received) / steps;
    r.metrics["dist_optimizer_state_bytes"] = m.optimizer.state_bytes();
    r.metrics["seconds_dist_exchange"] = r.update.seconds_exchange;  // part of seconds_update
  }
  return r;
}

}  // namespace gtpo::rl
