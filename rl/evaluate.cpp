#include "rl/evaluate.h"

#include <chrono>

#include "data/prompt_tokens.h"
#include "model/sampler.h"
#include "rl/math/pass_at_k.h"
#include "rl/non_finite.h"
#include "rl/rollout_phase.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"

namespace gtpo::rl {

EvalResult evaluate(const model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
                    const EvalOptions& o) {
  GTPO_CHECK(o.problems > 0, "eval: the number of problems must be positive");
  GTPO_CHECK(o.k >= 0, "eval: k must be >= 0");
  const auto start = std::chrono::steady_clock::now();
  EvalResult result;
  result.problems = source.test_count(o.problems);
  result.records.resize(static_cast<size_t>(result.problems));
  int64_t greedy_correct = 0, greedy_tokens = 0, greedy_truncated = 0, sample_correct = 0;
  std::vector<int64_t> correct_per_problem(static_cast<size_t>(result.problems), 0);

  for (int64_t b0 = 0; b0 < result.problems; b0 += o.batch_prompts) {
    const int64_t b1 = std::min(result.problems, b0 + o.batch_prompts);
    std::vector<model::PromptInput> prompts;
    std::vector<data::Problem> problems;
    for (int64_t i = b0; i < b1; ++i) {
      problems.push_back(source.test(static_cast<uint64_t>(i)));
      prompts.push_back({static_cast<uint64_t>(i), data::encode_prompt(tokenizer, problems.back())});
    }
    model::SamplingOptions greedy;
    attach_tokenizer(greedy, tokenizer);
    greedy.temperature = 0.0f;
    greedy.max_new_tokens = o.max_new_tokens;
    std::vector<model::Sample> g = model::sample_groups(model, prompts, model::with_model_eos(greedy, model));
    // A diverged model decodes garbage that merely scores 0: stop instead (rl/non_finite.h).
    for (const model::Sample& sample : g)
      for (float lp : sample.logprobs) check_finite(lp, "eval", -1, "log-probability of a greedy token");
    for (int64_t i = b0; i < b1; ++i) {
      const size_t local = static_cast<size_t>(i - b0);
      EvalRecord& rec = result.records[static_cast<size_t>(i)];
      rec.index = static_cast<uint64_t>(i);
      rec.prompt = problems[local].prompt;
      rec.answer = problems[local].answer;
      rec.greedy_completion = decode_completion(tokenizer, g[local]);
      const bool truncated = g[local].finish == model::FinishReason::length;
      rec.greedy_correct = !truncated && source.check(problems[local], rec.greedy_completion).correct;
      greedy_correct += rec.greedy_correct;
      greedy_tokens += static_cast<int64_t>(g[local].tokens.size());
      greedy_truncated += truncated;
    }
    if (o.k > 0) {
      model::SamplingOptions sampled;
      attach_tokenizer(sampled, tokenizer);
      sampled.temperature = o.temperature;
      sampled.max_new_tokens = o.max_new_tokens;
      sampled.group_size = o.k;
      sampled.seed = o.seed;
      std::vector<model::Sample> s = model::sample_groups(model, prompts, model::with_model_eos(sampled, model));
      for (int64_t i = b0; i < b1; ++i) {
        EvalRecord& rec = result.records[static_cast<size_t>(i)];
        for (int64_t j = 0; j < o.k; ++j) {
          const model::Sample& sample = s[static_cast<size_t>((i - b0) * o.k + j)];
          std::string text = decode_completion(tokenizer, sample);
          const bool ok = sample.finish != model::FinishReason::length &&
                          source.check(problems[static_cast<size_t>(i - b0)], text).correct;
          rec.sample_completions.push_back(std::move(text));
          rec.sample_correct.push_back(ok);
          correct_per_problem[static_cast<size_t>(i)] += ok;
          sample_correct += ok;
        }
      }
    }
  }
  const double n = static_cast<double>(result.problems);
  result.greedy_accuracy = greedy_correct / n;
  result.greedy_mean_length = greedy_tokens / n;
  result.greedy_truncated = greedy_truncated / n;
  if (o.k > 0) {
    result.mean_at_k = sample_correct / (n * static_cast<double>(o.k));
    for (int64_t k : pass_at_k_ks(o.k)) result.pass_at_k.emplace_back(k, mean_pass_at_k(correct_per_problem, o.k, k));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

// The eval section: read by eval_options below.
std::vector<RunKey> schema::eval_keys() {
  using config::field;
  const auto i64 = [](int64_t lo) { return config::integer<int64_t>(lo); };
  return {
      field("eval", "every", &RunConfig::eval, &EvalSection::every, i64(0),
            "evaluate every this many RL steps; 0 = only at the start and the end"),
      field("eval", "num_problems", &RunConfig::eval, &EvalSection::num_problems,
            config::integer<int64_t>(1, 1 << 24), "test problems per evaluation"),
      field("eval", "k", &RunConfig::eval, &EvalSection::k, config::integer<int64_t>(1, 1 << 16),
            "samples per problem: pass@k and mean@k for k = 1, 2, 4, ... and eval.k itself"),
      field("eval", "temperature", &RunConfig::eval, &EvalSection::temperature,
            config::number(0, std::numeric_limits<double>::infinity()),
            "temperature of the k samples (greedy accuracy is also reported)"),
      field("eval", "max_new_tokens", &RunConfig::eval, &EvalSection::max_new_tokens, i64(0),
            "response length limit in evaluation; 0 = sampler.max_new_tokens"),
      field("eval", "before_rl", &RunConfig::eval, &EvalSection::before_rl, config::boolean(),
            "evaluate when RL starts; false skips it (many runs from one SFT checkpoint that was evaluated once)"),
  };
}

EvalOptions eval_options(const RunConfig& c) {
  EvalOptions o;
  o.problems = c.eval.num_problems;
  o.k = c.eval.k;
  o.temperature = static_cast<float>(c.eval.temperature);
  o.max_new_tokens = c.eval.max_new_tokens > 0 ? c.eval.max_new_tokens : c.sampler.max_new_tokens;
  o.seed = c.train.seed;
  return o;
}

}  // namespace gtpo::rl
