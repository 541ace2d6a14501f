// Grouped rollouts with a KV cache: for each prompt, G samples that share one prefilled prompt.
//
// Randomness is counter-based, keyed by (seed, prompt id, sample index, position), so a sample never
// changes when the batch around it changes; the draw from a row of logits is runtime/token_choice.h's, the
// same on every backend. Each generated token comes with its log-prob under the
// temperature-scaled full distribution and that distribution's full-vocabulary entropy, computed by the
// same fused kernel that training uses (ops::token_logprob_entropy): sampler and trainer agree by
// construction.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/transformer.h"

namespace gtpo::model {

struct SamplingOptions {
  int64_t group_size = 1;   // G samples per prompt
  float temperature = 1.0f;  // 0 means greedy (log-probs and entropies are then reported at temperature 1)
  int64_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // 1: off
  int64_t max_new_tokens = 64;
  uint64_t seed = 0;
  int32_t eos_id = -1;       // -1: no end-of-sequence token
  std::vector<int32_t> extra_eos_ids;  // more ids that end a sample as eos_id does (FinishReason::eos)
  int32_t pad_id = 0;        // fed for left padding (and finished rows, see below); never attended to
  // Only ids [0, sampleable_ids) are ever chosen (0: every id of the model's vocabulary). Set to the
  // tokenizer's size, so that a model with more embedding rows than the tokenizer has entries (Qwen2.5:
  // 151,936 against 151,665) never samples an id nothing can decode. Log-probs and entropies stay those of
  // the full distribution, as the update computes them (as for top-k and top-p).
  int64_t sampleable_ids = 0;
  // Finished rows leave the decode batch (ops::attention_cached reads the rest's cache rows): the same
  // samples, bit for bit, without computing rows nobody reads. false feeds them a pad every step instead
  // (the reference the tests compare with).
  bool drop_finished_rows = true;
  // On a GPU: the token choice runs there (ops::choose_tokens) and only the ids come back, instead of the
  // logits being copied to the host and chosen there. The same ids either way (runtime/token_choice.h
  // defines the draw for every backend); off until a GPU has measured it. No effect on the CPU.
  bool choose_on_device = false;
  std::vector<std::string> stop_strings;
  // Turns generated tokens into text, for stop strings; required when stop_strings is not empty.
  std::function<std::string(const std::vector<int32_t>&)> decode;
};

struct PromptInput {
  uint64_t prompt_id = 0;  // keys the random stream; use a stable id (e.g. the dataset index)
  std::vector<int32_t> tokens;
};

enum class FinishReason { eos, stop, length };
const char* finish_reason_name(FinishReason r);

struct Sample {
  uint64_t prompt_id = 0;
  int64_t sample_index = 0;
  std::vector<int32_t> prompt_tokens;
  std::vector<int32_t> tokens;  // generated tokens, EOS or the token completing a stop string included
  std::vector<float> logprobs;
  std::vector<float> entropies;
  FinishReason finish = FinishReason::length;
};

struct SamplerStats {
  int64_t prefill_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  int64_t kv_cache_bytes = 0;
  // Where decode_seconds went, summed over steps: the model's forward (its launches, host-side checks and, on
  // a device, the wait for it), the logits' copy to the host, the token choice there (with choose_on_device:
  // no copy; the choice kernel and the ids' copy back), and the log-prob and entropy kernel with its copy
  // back. The rest is bookkeeping.
  double decode_forward_seconds = 0.0;
  double decode_logits_seconds = 0.0;
  double decode_choose_seconds = 0.0;
  double decode_logprob_seconds = 0.0;

  SamplerStats& operator+=(const SamplerStats& o);  // counters and times add; kv_cache_bytes adds too (ranks)
};

// OPTIONS plus the model's own end-of-sequence ids (Transformer::eos_token_ids) as extra_eos_ids.
SamplingOptions with_model_eos(SamplingOptions options, const Transformer& model);

// Samples G continuations of every prompt; results are ordered prompt-major (prompt 0's G samples first).
std::vector<Sample> sample_groups(const Transformer& model, const std::vector<PromptInput>& prompts,
                                  const SamplingOptions& options, SamplerStats* stats = nullptr);

}  // namespace gtpo::model
