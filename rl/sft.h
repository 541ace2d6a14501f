// Supervised warm start: next-token cross-entropy on reference solutions, with the loss on the
// solution tokens (and the end-of-sequence token) only, never on the prompt.
#pragma once
#include <cstdint>
#include <functional>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/problem_source.h"
#include "runtime/optim/adamw.h"
#include "runtime/optim/lr_schedule.h"

namespace gtpo::rl {

struct SftOptions {
  int64_t steps = 0;
  int64_t batch_size = 32;
  optim::LrScheduleOptions schedule;
  float weight_decay = 0.0f;
  float grad_clip = 1.0f;
};

struct SftStep {
  int64_t step = 0;  // 1-based
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  int64_t tokens = 0;  // tokens in the loss
  double seconds = 0.0;
};

// Trains on train-split problems starting at `cursor` (advanced past those used); calls on_step after
// every step.
void run_sft(model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
             const SftOptions& options, uint64_t& cursor, const std::function<void(const SftStep&)>& on_step);

// The token sequence and the index of its first supervised token, for one problem.
std::vector<int32_t> sft_sequence(const data::Tokenizer& tokenizer, const data::Problem& problem, int64_t& first_target);

}  // namespace gtpo::rl
