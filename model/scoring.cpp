#include "model/scoring.h"

#include "runtime/autograd.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace gtpo::model {

TokenScores score_tokens(const Transformer& model, std::span<const int32_t> tokens, int64_t prompt_len,
                         float temperature, bool with_argmax) {
  const int64_t T = static_cast<int64_t>(tokens.size()), V = model.config().vocab_size;
  GTPO_CHECK(prompt_len >= 1 && prompt_len <= T, "scoring: prompt_len must be in [1, ", T, "], got ",
             prompt_len);
  GTPO_CHECK(T <= model.config().max_position_embeddings, "scoring: ", T, " tokens exceed the model's ",
             "max_position_embeddings ", model.config().max_position_embeddings);
  GTPO_CHECK(temperature > 0.0f, "scoring: the temperature must be positive, got ", temperature);
  for (const int32_t id : tokens)
    GTPO_CHECK(id >= 0 && id < V, "scoring: token id ", id, " outside the model's vocabulary [0, ", V, ")");
  TokenScores out;
  if (prompt_len == T) return out;
  NoGradGuard no_grad;
  const std::vector<int32_t> ids(tokens.begin(), tokens.end());
  Tensor logits = model.forward(Tensor::from_ints(ids, {1, T}, model.device()));  // [1, T, V]
  Tensor rows =
      ops::reshape(ops::slice(logits, 1, prompt_len - 1, T - 1), {T - prompt_len, V});  // predicting
  const std::vector<int32_t> targets(ids.begin() + prompt_len, ids.end());
  ops::LogprobEntropy lp = ops::token_logprob_entropy(
      rows, Tensor::from_ints(targets, {T - prompt_len}, model.device()), temperature);
  out.logprobs = lp.logprob.to_vector();
  out.entropies = lp.entropy.to_vector();
  if (with_argmax) {
    TokenChoiceArgs greedy;
    greedy.temperature = 0.0f;  // the largest logit, lowest id on ties (runtime/token_choice.h)
    greedy.choice_ids = V;
    out.argmax = ops::choose_tokens(rows, {}, greedy).to_int_vector();
  }
  return out;
}

}  // namespace gtpo::model
