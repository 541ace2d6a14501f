// Evaluation on the test split: greedy accuracy, and with k samples per problem mean@k and the unbiased
// pass@k for k in {1, 2, 4, ..., K}.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/problem_source.h"

namespace gtpo::rl {

struct EvalOptions {
  int64_t problems = 200;
  int64_t k = 4;                 // samples per problem for mean@k / pass@k; 0 = greedy only
  int64_t sampled_problems = 0;  // the first this many problems get the k samples; 0 = all
  float temperature = 1.0f;
  int64_t max_new_tokens = 48;
  uint64_t seed = 0;
  int64_t batch_prompts = 64;    // prompts decoded together
};

struct EvalRecord {
  uint64_t index = 0;
  std::string prompt, answer;
  std::string greedy_completion;
  bool greedy_correct = false;
  std::vector<std::string> sample_completions;
  std::vector<bool> sample_correct;
};

struct EvalResult {
  int64_t problems = 0;
  int64_t sampled_problems = 0;  // of those, the first ones with k samples (0 with k = 0)
  double greedy_accuracy = 0.0;
  double mean_at_k = 0.0;                             // mean accuracy of the k samples (of sampled_problems)
  std::vector<std::pair<int64_t, double>> pass_at_k;  // (k, pass@k)
  double greedy_mean_length = 0.0;
  double greedy_truncated = 0.0;
  double seconds = 0.0;
  std::vector<EvalRecord> records;
};

struct RunConfig;
// The evaluation a run config asks for (eval.*, with sampler.max_new_tokens and train.seed).
EvalOptions eval_options(const RunConfig& config);
// The evaluation after the last RL step: eval.final_problems and eval.final_sampled_problems over the above,
// the evaluation a study's answer rests on (e.g. 2,000 greedy problems and mean@4 on the first 1,000).
EvalOptions final_eval_options(const RunConfig& config);

EvalResult evaluate(const model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
                    const EvalOptions& options);

}  // namespace gtpo::rl
