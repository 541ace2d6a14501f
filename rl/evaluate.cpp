#include "rl/evaluate.h"

#include <chrono>

#include "data/prompt_tokens.h"
#include "model/sampler.h"
#include "rl/math/pass_at_k.h"
#include "rl/rollout_phase.h"
#include "rl/non_finite.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"

namespace gtpo::rl {

namespace {

// Problems [b0, b1) of the test split and their encoded prompts.
struct EvalBatch {
  int64_t b0 = 0, b1 = 0;
  std::vector<data::Problem> problems;
  std::vector<model::PromptInput> prompts;
};

model::SamplingOptions eval_sampling(const data::Tokenizer& tokenizer, const EvalOptions& o,
                                     float temperature, int64_t group_size) {
  model::SamplingOptions s;
  attach_tokenizer(s, tokenizer);
  s.temperature = temperature;
  s.max_new_tokens = o.max_new_tokens;
  s.group_size = group_size;
  s.seed = o.seed;
  return s;
}

void run_greedy(const model::Transformer& model, const data::Tokenizer& tokenizer,
                const ProblemSource& source, const EvalOptions& o, const EvalBatch& b, EvalResult& result,
                int64_t& tokens, int64_t& truncated) {
  const model::SamplingOptions greedy = eval_sampling(tokenizer, o, 0.0f, 1);
  std::vector<model::Sample> g = model::sample_groups(model, b.prompts, model::with_model_eos(greedy, model));
  // A diverged model decodes garbage that merely scores 0: stop instead (rl/non_finite.h).
  for (const model::Sample& sample : g)
    for (float lp : sample.logprobs) check_finite(lp, "eval", -1, "log-probability of a greedy token");
  for (int64_t i = b.b0; i < b.b1; ++i) {
    const size_t local = static_cast<size_t>(i - b.b0);
    EvalRecord& rec = result.records[static_cast<size_t>(i)];
    rec.index = static_cast<uint64_t>(i);
    rec.prompt = b.problems[local].prompt;
    rec.answer = b.problems[local].answer;
    rec.greedy_completion = decode_completion(tokenizer, g[local]);
    const bool cut = g[local].finish == model::FinishReason::length;
    rec.greedy_correct = !cut && source.check(b.problems[local], rec.greedy_completion).correct;
    tokens += static_cast<int64_t>(g[local].tokens.size());
    truncated += cut;
  }
}

// The k samples of the batch's problems below SAMPLED; each problem's correct count into CORRECT.
void run_sampled(const model::Transformer& model, const data::Tokenizer& tokenizer,
                 const ProblemSource& source, const EvalOptions& o, const EvalBatch& b, int64_t sampled,
                 EvalResult& result, std::vector<int64_t>& correct) {
  const int64_t b1 = std::min(b.b1, sampled);
  if (b1 <= b.b0) return;
  const std::vector<model::PromptInput> prompts(b.prompts.begin(), b.prompts.begin() + (b1 - b.b0));
  const model::SamplingOptions options = eval_sampling(tokenizer, o, o.temperature, o.k);
  std::vector<model::Sample> s = model::sample_groups(model, prompts, model::with_model_eos(options, model));
  for (int64_t i = b.b0; i < b1; ++i) {
    EvalRecord& rec = result.records[static_cast<size_t>(i)];
    for (int64_t j = 0; j < o.k; ++j) {
      const model::Sample& sample = s[static_cast<size_t>((i - b.b0) * o.k + j)];
      std::string text = decode_completion(tokenizer, sample);
      const bool ok = sample.finish != model::FinishReason::length &&
                      source.check(b.problems[static_cast<size_t>(i - b.b0)], text).correct;
      rec.sample_completions.push_back(std::move(text));
      rec.sample_correct.push_back(ok);
      correct[static_cast<size_t>(i)] += ok;
    }
  }
}

}  // namespace

EvalResult evaluate(const model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
                    const EvalOptions& o) {
  GTPO_CHECK(o.problems > 0, "eval: the number of problems must be positive");
  GTPO_CHECK(o.k >= 0, "eval: k must be >= 0");
  GTPO_CHECK(o.sampled_problems >= 0, "eval: the number of sampled problems must be >= 0");
  const auto start = std::chrono::steady_clock::now();
  EvalResult result;
  result.problems = source.test_count(o.problems);
  result.sampled_problems =
      o.k > 0 ? (o.sampled_problems > 0 ? std::min(o.sampled_problems, result.problems) : result.problems)
              : 0;
  result.records.resize(static_cast<size_t>(result.problems));
  int64_t greedy_tokens = 0, greedy_truncated = 0;
  std::vector<int64_t> correct_per_problem(static_cast<size_t>(result.problems), 0);
  for (int64_t b0 = 0; b0 < result.problems; b0 += o.batch_prompts) {
    EvalBatch b{b0, std::min(result.problems, b0 + o.batch_prompts), {}, {}};
    for (int64_t i = b.b0; i < b.b1; ++i) {
      b.problems.push_back(source.test(static_cast<uint64_t>(i)));
      b.prompts.push_back({static_cast<uint64_t>(i), data::encode_prompt(tokenizer, b.problems.back())});
    }
    run_greedy(model, tokenizer, source, o, b, result, greedy_tokens, greedy_truncated);
    if (o.k > 0)
      run_sampled(model, tokenizer, source, o, b, result.sampled_problems, result, correct_per_problem);
  }
  const double n = static_cast<double>(result.problems);
  int64_t greedy_correct = 0;
  for (const EvalRecord& rec : result.records) greedy_correct += rec.greedy_correct;
  result.greedy_accuracy = greedy_correct / n;
  result.greedy_mean_length = greedy_tokens / n;
  result.greedy_truncated = greedy_truncated / n;
  if (result.sampled_problems > 0) {
    correct_per_problem.resize(static_cast<size_t>(result.sampled_problems));
    int64_t sample_correct = 0;
    for (int64_t c : correct_per_problem) sample_correct += c;
    result.mean_at_k =
        sample_correct / (static_cast<double>(result.sampled_problems) * static_cast<double>(o.k));
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
      field("eval", "final_problems", &RunConfig::eval, &EvalSection::final_problems, i64(0),
            "test problems of the evaluation after the last RL step (greedy); 0 = eval.num_problems"),
      field("eval", "final_sampled_problems", &RunConfig::eval, &EvalSection::final_sampled_problems, i64(0),
            "of those, the first this many also get eval.k samples (mean@k, pass@k); 0 = all of them"),
      field("eval", "before_rl", &RunConfig::eval, &EvalSection::before_rl, config::boolean(),
            "evaluate when RL starts; false skips it (many runs from one SFT checkpoint that was evaluated "
            "once)"),
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

EvalOptions final_eval_options(const RunConfig& c) {
  EvalOptions o = eval_options(c);
  if (c.eval.final_problems > 0) o.problems = c.eval.final_problems;
  o.sampled_problems = c.eval.final_sampled_problems;
  return o;
}

}  // namespace gtpo::rl
