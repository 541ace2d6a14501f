// The update phase of one RL step: ppo_epochs passes over mini-batches of prompts, each split into
// micro-batches of at most model::micro_batch_token_budget padded tokens whose gradients accumulate, then one
// clipped AdamW step per mini-batch.
#pragma once
#include <cstdint>
#include <vector>

#include "model/transformer.h"
#include "rl/math/rollout.h"
#include "rl/policy_loss.h"
#include "rl/rollout_phase.h"
#include "runtime/dist/communicator.h"
#include "runtime/optim/adamw.h"

namespace gtpo::rl {

struct UpdateOptions {
  float temperature = 1.0f;          // log-probs are taken at the sampling temperature
  float grad_clip = 1.0f;             // 0: off
  float lr = 1e-3f;
  int32_t pad_id = 0;
  uint64_t seed = 0;  // of the step: Clip-Cov's random pick
};

struct UpdateStats {
  PolicyLossMetrics loss;  // losses: means per optimiser step; fractions and ratios: token-weighted means
  double grad_norm = 0.0;  // of the last optimiser step, before clipping
  double grad_clip_frac =
      0.0;  // share of the optimiser steps whose norm was above optim.grad_clip (it bound)
  int64_t optimizer_steps = 0;
  int64_t tokens = 0;      // response tokens that entered the loss, summed over epochs
  std::vector<ClipStatuses> clip;  // per item of the batch, from the last epoch
  // The sampler/trainer gap |log π_train − log π_sampler| before the step's first optimiser step, largest
  // and mean over the loss tokens: from the forward of the first mini-batch (its tokens), or with
  // rl.rollout_correction from its scoring of the whole batch. And rl.rollout_correction's share of
  // tokens whose ρ = π_old/π_sampler is above the cap (truncated or masked).
  double sampler_gap_max = 0.0, sampler_gap_mean = 0.0, correction_frac = 0.0;
  dist::Traffic traffic;  // this rank's bytes for the optimiser steps' exchanges (several ranks), summed
  double seconds_exchange = 0.0;  // and the time in them
};

// With several ranks (COMM; every rank holds the whole batch and its advantages), each rank back-propagates
// a contiguous block of the micro-batches one process would run; the loss normalisers span the whole
// mini-batch as they do in one process, each optimiser step is dist::optimizer_step (gradients reduced in
// rank order, OPTIMIZER sharded as dist::optimizer_shard), and the metrics are accumulated in micro-batch
// order on every rank (docs/distributed.md).
UpdateStats run_policy_update(model::Transformer& policy, optim::AdamW& optimizer, const RolloutBatch& batch,
                              const AdvantageResult& advantages, const RlConfig& rl, const UpdateOptions& options,
                              const model::Transformer* reference = nullptr,
                              dist::Communicator& comm = dist::single_process());

// The gradient of the policy loss on the whole batch as one mini-batch, on this process, without an
// optimiser step: the policy's gradients are zeroed, then hold it (what `gtpo probe` compares between
// methods). The ratio is 1, as in the first mini-batch of a step; the metrics are as run_policy_update's.
UpdateStats policy_gradient(model::Transformer& policy, const RolloutBatch& batch,
                            const AdvantageResult& advantages, const RlConfig& rl,
                            const UpdateOptions& options, const model::Transformer* reference = nullptr);

}  // namespace gtpo::rl
