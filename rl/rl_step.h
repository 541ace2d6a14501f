// One RL step, the one function the training loop, `gtpo bench --workload rlstep` and the tests call:
// rollout (sample G responses per prompt with the old policy's log-probs and entropies) → verify and
// score (reward functions, rl/reward.h; a failing external reward stops the step before any update) →
// dynamic sampling (rl.dynamic_sampling, done once, in the rollout phase) → shaped rewards and
// advantages (rl.algo) → clipped policy updates (rl.ppo_epochs × mini-batches × micro-batches).
// The per-response data flows once: the sampler's entropies move into the advantage math's Response, and
// the groups are known by construction (G consecutive responses per prompt), never rebuilt from keys.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/math/advantages.h"
#include "rl/policy_update.h"
#include "rl/problem_source.h"
#include "rl/reward_runner.h"
#include "rl/rollout_phase.h"
#include "rl/run_config.h"
#include "runtime/dist/communicator.h"
#include "runtime/optim/adamw.h"

namespace gtpo::rl {

// What a step reads and writes besides the config.
struct RlStepModels {
  model::Transformer& policy;
  const model::Transformer* reference;  // frozen π_ref when rl.kl_coef != 0, else nullptr
  optim::AdamW& optimizer;
  const data::Tokenizer& tokenizer;
  const ProblemSource& source;
  // The run's reward functions with their processes (rl/reward_runner.h); null = a runner made for this
  // step alone from the config (external processes then live for one step).
  RewardRunner* rewards = nullptr;
  // The ranks of a data-parallel run (docs/distributed.md); every rank returns the same result.
  dist::Communicator& comm = dist::single_process();
  // The frozen teacher of on-policy distillation (teacher.path, rl/distillation.h), else nullptr.
  const model::Transformer* teacher = nullptr;
};

struct RlStepResult {
  RolloutBatch batch;
  AdvantageResult advantages;
  UpdateStats update;
  double seconds_rollout = 0.0, seconds_advantages = 0.0, seconds_update = 0.0;
  double seconds_teacher =
      0.0;                 // distillation's scoring passes (teacher.path), between rollout and advantages
  nlohmann::json metrics;  // one metrics.jsonl line (without seconds_step, which the caller times)
};

// The update options step STEP uses: log-probs at the sampling temperature, optim.grad_clip, LR, a seed from
// train.seed and the step.
UpdateOptions update_options(const RunConfig& config, const model::SamplingOptions& sampling, float lr,
                             int64_t step);

// The advantage math's context for BATCH (collected by step STEP's rollout phase, its groups GROUPS, which
// must outlive the context): sampler.max_new_tokens, the groups as already filtered, the token rewards of
// the reward functions that give them, reward.token_gamma, and a seed from train.seed and the step.
BatchContext advantage_context(const RunConfig& config, const RolloutBatch& batch, const Grouping& groups,
                               int64_t step);

// Step number STEP (1-based) at learning rate LR; advances CURSOR past every prompt it samples. ENTROPY_COEF,
// when given, replaces rl.entropy_coef for this step (rl.entropy_target's adaptive coefficient).
RlStepResult rl_step(const RlStepModels& models, const RunConfig& config, uint64_t& cursor, int64_t step,
                     float lr, std::optional<double> entropy_coef = std::nullopt);

}  // namespace gtpo::rl
