#include "rl/run/run_checks.h"

#include <algorithm>
#include <cstdio>

#include "data/prompt_tokens.h"
#include "model/memory_estimate.h"
#include "rl/math/algorithm_registry.h"
#include "rl/sft.h"
#include "runtime/error.h"

namespace gtpo::rl {

namespace {
// A generator has no end: this many train problems stand for the rest (its prompts vary little in length).
constexpr uint64_t kTrainProblemsChecked = 512;

struct Longest {
  int64_t tokens = 0;
  std::string which;  // "train problem 17"
};

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}
}  // namespace

void check_tokenizer_fits(const data::Tokenizer& tokenizer, const std::string& tokenizer_where,
                          int64_t vocab_size, const std::string& vocab_where) {
  int64_t highest = static_cast<int64_t>(tokenizer.vocab_size()) - 1;
  for (int32_t id : {tokenizer.eos_id(), tokenizer.pad_id(), tokenizer.bos_id()})
    highest = std::max<int64_t>(highest, id);
  GTPO_CHECK(highest < vocab_size, "the tokenizer (", tokenizer_where, ") has ", tokenizer.vocab_size(),
             " tokens (ids up to ", highest, ") but ", vocab_where, " is ", vocab_size,
             ": the model cannot represent every token; raise model.vocab_size or use a smaller vocabulary");
}

void check_run_consistency(const RunConfig& c, const model::ModelConfig& m, const data::Tokenizer& tokenizer,
                           const std::string& tokenizer_where, const ProblemSource& source) {
  check_tokenizer_fits(tokenizer, tokenizer_where, m.vocab_size, "model.vocab_size");

  Longest train_prompt, test_prompt, sft_sequence_len;
  auto look_at = [&](const data::Problem& p, Longest& longest, const std::string& which, bool train) {
    const int64_t n = static_cast<int64_t>(data::encode_prompt(tokenizer, p).size());
    if (n > longest.tokens) longest = {n, which};
    if (train && c.sft.steps > 0) {
      int64_t first = 0;
      const int64_t total = static_cast<int64_t>(sft_sequence(tokenizer, p, first).size());
      if (total > sft_sequence_len.tokens) sft_sequence_len = {total, which};
    }
  };
  const uint64_t trains =
      source.train_size() > 0 ? static_cast<uint64_t>(source.train_size()) : kTrainProblemsChecked;
  for (uint64_t i = 0; i < trains; ++i)
    look_at(source.train(i), train_prompt, "train problem " + std::to_string(i), true);
  const int64_t tests = source.test_count(c.eval.num_problems);
  for (int64_t i = 0; i < tests; ++i)
    look_at(source.test(static_cast<uint64_t>(i)), test_prompt, "test problem " + std::to_string(i), false);

  const int64_t context = m.max_position_embeddings;
  auto check_fits = [&](const Longest& longest, int64_t new_tokens, const char* new_key) {
    GTPO_CHECK(longest.tokens + new_tokens <= context, "the longest prompt (", longest.which, " of task ",
               source.name(), ", ", longest.tokens, " tokens) + ", new_key, " ", new_tokens, " = ",
               longest.tokens + new_tokens, " tokens exceeds model.max_position_embeddings ", context,
               ": lower ", new_key, " or use a model with a longer context");
  };
  check_fits(train_prompt, c.sampler.max_new_tokens, "sampler.max_new_tokens");
  if (c.eval.max_new_tokens > 0)
    check_fits(test_prompt, c.eval.max_new_tokens, "eval.max_new_tokens");
  else
    check_fits(test_prompt, c.sampler.max_new_tokens, "sampler.max_new_tokens (eval.max_new_tokens is 0)");
  GTPO_CHECK(sft_sequence_len.tokens <= context, "the longest SFT sequence (", sft_sequence_len.which,
             " of task ", source.name(), ": prompt + reference solution + end of sequence, ",
             sft_sequence_len.tokens, " tokens) exceeds model.max_position_embeddings ", context,
             " (sft.steps is ", c.sft.steps, ")");

  const int64_t rows = c.train.prompts_per_step * c.sampler.group_size;
  const double need = model::generation_bytes(m, rows, train_prompt.tokens + c.sampler.max_new_tokens);
  const double have = model::physical_memory_bytes();
  GTPO_CHECK(have == 0.0 || need < have, "train.prompts_per_step ", c.train.prompts_per_step,
             " × sampler.group_size ", c.sampler.group_size, " = ", rows, " sequences need about ", gib(need),
             " for their keys, values and logits, more than this machine's ", gib(have),
             " of memory: lower train.prompts_per_step or sampler.group_size");
}

std::string reward_value_note(const RunConfig& c) {
  const auto from_correctness = find_algorithm(c.rl.algo).outcome_from_correctness;
  if (from_correctness == nullptr || !from_correctness(c.rl)) return "";
  std::vector<std::string> valued;
  for (const RewardFunctionConfig& f : c.reward.functions)
    if (f.name != "correct" || !f.command.empty()) valued.push_back(f.name);
  if (valued.empty()) return "";
  std::vector<std::string> by_value;  // the algorithms without an outcome key
  for (const Algorithm& a : all_algorithms())
    if (a.outcome_from_correctness == nullptr) by_value.emplace_back(a.name);
  return "rl.algo " + c.rl.algo + " shapes rewards from correctness alone: the values of reward.functions " +
         config::join(valued) +
         " enter only through the correctness they imply (a function's `correct` flag, " +
         "else r_i >= reward.correct_threshold " + config::format_double(c.reward.correct_threshold) +
         "), never as magnitudes; " + config::join(by_value) + " use r_i itself (docs/algorithms.md, " +
         "\"Rewards from reward functions\"; " + c.rl.algo + ".outcome=reward lets r_i in)";
}

}  // namespace gtpo::rl
