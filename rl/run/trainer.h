// The RL trainer: optional SFT warm start, then steps of rollout → verify → (dynamic sampling) →
// shaped rewards and advantages → clipped policy updates, with periodic evaluation, logs and
// checkpoints in a run directory. A run resumed from its latest checkpoint continues bit for bit.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/evaluate.h"
#include "rl/problem_source.h"
#include "rl/run_config.h"
#include "rl/sft.h"
#include "rl/stop_flag.h"  // request_stop, stop_requested: the trainer reads them
#include "runtime/dist/communicator.h"
#include "runtime/optim/adamw.h"

namespace gtpo::rl {

struct RlStepResult;  // rl/rl_step.h
class RewardRunner;   // rl/reward_runner.h

// AdamW settings of the RL updates (optim.*).
optim::AdamWOptions adam_options(const OptimSection& optim);

struct TrainSummary {
  double accuracy_before_rl = -1.0;  // greedy test accuracy when RL started (after SFT); -1 = not measured
  double accuracy_after_rl = -1.0;   // the last greedy test accuracy measured, at accuracy_step; -1 = none
  int64_t accuracy_step = -1;        // RL step of accuracy_after_rl (0 = before RL); -1 = none
  int64_t steps = 0;                 // RL steps completed
  int64_t sft_steps = 0;             // SFT steps completed
  bool interrupted = false;          // stopped by request_stop before the end
  int stop_signal = 0;               // the signal that asked for the stop (SIGINT, SIGTERM), 0 = none
  std::string checkpoint;            // the last checkpoint written
  bool already_complete = false;     // resumed a run that had done every step: nothing ran, nothing written
};

// What one `gtpo train` invocation adds to a run: the first one, or a --resume. Each is a line of
// RUN/segments.jsonl, so that a run says which overrides changed its config.yaml and from which step.
struct RunSegment {
  bool resume = false;
  std::string config;         // the config file read (RUN/config.yaml when resuming)
  ConfigOverrides overrides;  // the command line's overrides, as given
};

class Trainer {
 public:
  // Reads the resolved run config directly (train.*, optim.*, sft.*, eval.*, log.*, and through the RL step
  // sampler.* and rl.*); CONFIG must outlive the trainer.
  // With several ranks (COMM), every rank runs the trainer; rank 0 alone writes the run directory, prints
  // and evaluates, and every rank resumes from the same checkpoint (docs/distributed.md).
  Trainer(model::Transformer& policy, const data::Tokenizer& tokenizer, const ProblemSource& source,
          const RunConfig& config, dist::Communicator& comm = dist::single_process(),
          const model::Transformer* teacher = nullptr);
  // Continues from the run directory's latest checkpoint when segment.resume is true; otherwise
  // train.out_dir must be empty or absent (rl/run/run_dir.h). A resumed run that has done train.steps RL
  // steps returns at once (already_complete) and writes nothing. Otherwise config.yaml becomes this config
  // (the next --resume starts from it) and segments.jsonl gains the segment. A non-finite loss, gradient norm
  // or weight stops the run with NonFiniteError naming the step, the quantity and the last good checkpoint;
  // nothing is saved after it.
  TrainSummary run(const RunSegment& segment);

 private:
  // The phases of run(), over one segment's state (trainer.cpp).
  struct Run;
  TrainSummary run_unchecked(const RunSegment& segment, std::string& last_checkpoint);
  bool resume_from_latest(Run& run);  // false: the run had done every step already
  void open_logs(Run& run);
  bool warm_start(Run& run);  // SFT; false: a stop request ended it (saved)
  void rl_phase(Run& run);
  void record_step(Run& run, const RlStepResult& r, const RewardRunner& rewards, int64_t step,
                   std::chrono::steady_clock::time_point t_step);
  void after_step(Run& run, int64_t step);
  std::string save_checkpoint(Run& run, const optim::AdamW& in_use, const char* phase, int64_t step);
  std::string save_failed_step(Run& run);
  bool stop_agreed() const;  // a stop request on any rank
  EvalResult run_eval(Run& run, int64_t step, const char* label, bool final = false);
  void refresh_report(const Run& run) const;
  void log_progress(const std::string& line) const;

  model::Transformer& policy_;
  const data::Tokenizer& tokenizer_;
  const ProblemSource& source_;
  const RunConfig& c_;
  dist::Communicator& comm_;
  const model::Transformer* teacher_;  // on-policy distillation's (teacher.path), else nullptr
};

}  // namespace gtpo::rl
