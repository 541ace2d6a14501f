// Scoring a given sequence token by token: what `gtpo score` prints and what a distillation teacher (and
// its student) give each sampled token, from one function so that the two agree bit for bit.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/transformer.h"

namespace gtpo::model {

struct TokenScores {
  std::vector<float> logprobs;   // [T − prompt_len]: log p(token j | tokens < j) at the temperature
  std::vector<float> entropies;  // [T − prompt_len]: the full-vocabulary entropy of that distribution
  std::vector<int32_t>
      argmax;  // [T − prompt_len] with_argmax: the most likely id (lowest on ties), else empty
};

// Positions PROMPT_LEN .. T−1 of TOKENS (1 <= PROMPT_LEN <= T, T <= max_position_embeddings, ids in the
// model's vocabulary; else a gtpo::Error) under MODEL, one forward over the sequence alone (no padding, so a
// sequence's scores do not depend on what else is scored) and the fused log-prob/entropy of the trainer.
// Runs without building a graph.
TokenScores score_tokens(const Transformer& model, std::span<const int32_t> tokens, int64_t prompt_len,
                         float temperature = 1.0f, bool with_argmax = false);

}  // namespace gtpo::model
