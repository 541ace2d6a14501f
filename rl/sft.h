// Supervised warm start: next-token cross-entropy on reference solutions, with the loss on the
// solution tokens (and the end-of-sequence token) only, never on the prompt.
#pragma once
#include <cstdint>
#include <functional>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/problem_source.h"
#include "runtime/dist/communicator.h"
#include "runtime/optim/adamw.h"
#include "runtime/optim/lr_schedule.h"

namespace gtpo::rl {

struct RunConfig;
struct SftStep {
  int64_t step = 0;  // 1-based
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  int64_t tokens = 0;  // tokens in the loss
  double seconds = 0.0;
};

// Trains for sft.steps steps of sft.batch_size train-split problems starting at `cursor` (advanced past
// those used), with the gradient clipped at optim.grad_clip; calls on_step after every step. Each step's
// batch is cut into micro-batches of at most sft.micro_batch_tokens padded tokens whose gradients add up:
// every token's loss is divided by the whole batch's token count, so the split changes only rounding.
// A non-finite loss or gradient norm stops it with NonFiniteError (rl/non_finite.h) before the update.
void run_sft(model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
             const RunConfig& config, uint64_t& cursor, const std::function<void(const SftStep&)>& on_step);

// The AdamW settings of the warm start (sft.*).
optim::AdamWOptions sft_adam_options(const RunConfig& config);
// run_sft in resumable pieces: continues from `steps_done` completed steps with OPTIMIZER (built with
// sft_adam_options over the model's parameters, its state carried across pieces), advancing steps_done and
// cursor after each step, until sft.steps or until `stop` returns true after a step. With several ranks
// (COMM) each rank back-propagates a contiguous block of the micro-batches one process would run and every
// step is dist::optimizer_step (OPTIMIZER sharded as dist::optimizer_shard); STOP must then agree on every
// rank.
void continue_sft(model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
                  const RunConfig& config, optim::AdamW& optimizer, int64_t& steps_done, uint64_t& cursor,
                  const std::function<void(const SftStep&)>& on_step, const std::function<bool()>& stop,
                  dist::Communicator& comm = dist::single_process());

// The token sequence and the index of its first supervised token, for one problem.
std::vector<int32_t> sft_sequence(const data::Tokenizer& tokenizer, const data::Problem& problem, int64_t& first_target);

}  // namespace gtpo::rl
