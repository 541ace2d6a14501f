// The RL trainer: optional SFT warm start, then steps of rollout → verify → (dynamic sampling) →
// shaped rewards and advantages → clipped policy updates, with periodic evaluation, logs and
// checkpoints in a run directory. A run resumed from its latest checkpoint continues bit for bit.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "model/sampler.h"
#include "model/transformer.h"
#include "rl/evaluate.h"
#include "rl/problem_source.h"
#include "rl/rl_config.h"
#include "rl/sft.h"
#include "runtime/optim/adamw.h"
#include "runtime/optim/lr_schedule.h"

namespace gtpo::rl {

struct TrainerOptions {
  RlConfig rl;
  model::SamplingOptions sampling;  // group_size, temperature, top_k, top_p, max_new_tokens
  optim::AdamWOptions adam;
  optim::LrScheduleOptions schedule;
  float grad_clip = 1.0f;
  SftOptions sft;
  int64_t steps = 100;
  int64_t prompts_per_step = 8;
  uint64_t seed = 0;
  int64_t micro_batch_sequences = 0;
  std::string out_dir = "runs/default";
  int64_t checkpoint_every = 50;  // 0: only at the end
  int64_t sample_every = 10;      // 0: never
  int64_t samples_to_log = 2;
  int64_t eval_every = 20;        // 0: only when RL starts and at the end
  EvalOptions eval;
  bool progress = true;
  int64_t log_every = 1;          // progress line every this many RL steps
  int64_t sft_eval_every = 0;     // greedy test accuracy every this many SFT steps (into sft.jsonl); 0: none
  std::string config_yaml;        // the resolved run config, written to the run directory
};

struct TrainSummary {
  double accuracy_before_rl = 0.0;  // greedy test accuracy when RL started (after SFT)
  double accuracy_after_rl = 0.0;
  int64_t steps = 0;
  bool interrupted = false;
  std::string checkpoint;           // the last checkpoint written
};

// Asks a running trainer to stop after the current step and write a final checkpoint (SIGINT).
void request_stop();
bool stop_requested();

class Trainer {
 public:
  Trainer(model::Transformer& policy, const data::Tokenizer& tokenizer, const ProblemSource& source,
          TrainerOptions options);
  // Continues from the run directory's latest checkpoint when resume is true.
  TrainSummary run(bool resume);

 private:
  void log_progress(const std::string& line) const;

  model::Transformer& policy_;
  const data::Tokenizer& tokenizer_;
  const ProblemSource& source_;
  TrainerOptions o_;
};

}  // namespace gtpo::rl
