// Rough memory needs of generation, checked before allocating so that a size that cannot fit is an error
// naming the setting rather than std::bad_alloc (or the OOM killer) minutes later.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "model/model_config.h"

namespace gtpo::model {

// Bytes of the f32 keys and values of ROWS sequences of POSITIONS tokens, plus one row of logits each.
inline double generation_bytes(const ModelConfig& c, int64_t rows, int64_t positions) {
  const double kv = 2.0 * static_cast<double>(c.num_hidden_layers) * static_cast<double>(c.num_key_value_heads) *
                    static_cast<double>(c.head_dim()) * static_cast<double>(positions) * 4.0;
  return static_cast<double>(rows) * (kv + static_cast<double>(c.vocab_size) * 4.0);
}

// Bytes of f32 activations a training forward keeps for its backward, per token: per layer about nine
// rows of the hidden size (norm outputs, projections, attention output, residuals), three of the keys'
// and values' width (k, v, rotated k) and three of the MLP's intermediate size (gate, up, their product),
// plus a row of logits and one of their gradient. An estimate, for sizing micro-batches: on the larger TRL
// job's model (hidden 256, 12 layers, intermediate 704) it gives 230 KB a token, and the update's resident
// memory grew ~235 KB a token.
inline double training_activation_bytes_per_token(const ModelConfig& c) {
  const double kv_width = static_cast<double>(c.num_key_value_heads * c.head_dim());
  const double per_layer = 9.0 * static_cast<double>(c.hidden_size) + 3.0 * kv_width +
                           3.0 * static_cast<double>(c.intermediate_size);
  return 4.0 * (static_cast<double>(c.num_hidden_layers) * per_layer + 2.0 * static_cast<double>(c.vocab_size));
}

// Padded tokens of one training micro-batch at most: TOKENS when > 0 (an explicit budget), else as many tokens
// as MEMORY_MB MiB of activations hold by training_activation_bytes_per_token (at least one); 0 = no bound
// when both are 0. rl.* and sft.* micro_batch_tokens / micro_batch_memory_mb.
inline int64_t micro_batch_token_budget(int64_t tokens, int64_t memory_mb, const ModelConfig& c) {
  if (tokens > 0 || memory_mb <= 0) return tokens;
  const double bytes = static_cast<double>(memory_mb) * 1024.0 * 1024.0;
  return std::max<int64_t>(1, static_cast<int64_t>(bytes / training_activation_bytes_per_token(c)));
}

// Physical memory of this machine in bytes (0 when unknown).
inline double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace gtpo::model
