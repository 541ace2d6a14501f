// Consistency of a run's parts, checked when the run is set up, before any work: the model, the tokenizer,
// the task's prompts and the generation lengths must fit together. Each error names the keys involved.
#pragma once
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "model/model_config.h"
#include "rl/problem_source.h"
#include "rl/run_config.h"

namespace gtpo::rl {

// - every id the tokenizer can produce (its vocabulary, eos, pad, bos) is below model.vocab_size;
// - the longest prompt + sampler.max_new_tokens (and eval.max_new_tokens), and with SFT the longest prompt +
//   reference solution, fit model.max_position_embeddings (a file's every problem; a generator's first
//   train problems and the test problems evaluation uses);
// - a rollout batch (train.prompts_per_step × sampler.group_size sequences) fits this machine's memory.
// TOKENIZER_WHERE names where the tokenizer came from.
void check_run_consistency(const RunConfig& config, const model::ModelConfig& model,
                           const data::Tokenizer& tokenizer, const std::string& tokenizer_where,
                           const ProblemSource& source);

// With an algorithm whose math reads only the correctness c_i (gtpo, grpo_s: Algorithm::
// outcome_from_correctness) and reward functions whose values are more than correctness (any but the
// built-in `correct`): a note naming them and saying that their values shape nothing beyond the
// correctness they imply. Empty when there is nothing to say.
std::string reward_value_note(const RunConfig& config);

// The tokenizer part alone (also for eval, sample and score).
void check_tokenizer_fits(const data::Tokenizer& tokenizer, const std::string& tokenizer_where,
                          int64_t vocab_size, const std::string& vocab_where);

}  // namespace gtpo::rl
