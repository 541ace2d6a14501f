// The decoder-only transformer: GPT-2, or Llama / Qwen2 (RoPE, RMSNorm, SwiGLU, grouped-query attention).
//
// Parameters carry exactly the names, shapes and layouts of Hugging Face transformers' GPT2LMHeadModel
// (Conv1D weights stored [in, out]) and LlamaForCausalLM / Qwen2ForCausalLM (Linear weights [out, in]),
// so a checkpoint is those tensors written as they are. See docs/checkpoint-format.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/decode_weights.h"
#include "model/kv_cache.h"
#include "model/model_config.h"
#include "model/packed_layout.h"
#include "runtime/optim/parameters.h"
#include "runtime/tensor.h"

namespace gtpo::model {

class Transformer {
 public:
  // Allocates every parameter (zero-filled) on `device`; call init_weights or load a checkpoint next.
  explicit Transformer(const ModelConfig& config, Device device = Device::cpu);

  // GPT-2-style init, a pure function of (seed, parameter name, element): N(0, 0.02) for matrices and
  // embeddings, residual output projections scaled by 1/sqrt(2 * layers), zero biases, unit norm gains.
  void init_weights(uint64_t seed);

  const ModelConfig& config() const { return config_; }
  // The end-of-sequence ids its files give (generation_config.json, config.json; Llama 3 and
  // Qwen2.5-Instruct have several) and the bos id; empty / -1 for a fresh model. Sampling ends at any of
  // them (with_model_eos), and checkpoints write them back.
  const std::vector<int32_t>& eos_token_ids() const { return eos_token_ids_; }
  int32_t bos_token_id() const { return bos_token_id_; }
  void set_special_tokens(int32_t bos, std::vector<int32_t> eos) {
    bos_token_id_ = bos;
    eos_token_ids_ = std::move(eos);
  }
  Device device() const { return device_; }
  optim::ParameterStore& parameters() { return params_; }
  const optim::ParameterStore& parameters() const { return params_; }

  // Training / scoring forward. tokens i32 [B, T]; positions i32 [B, T] (undefined: 0..T-1 in every row);
  // key_mask i32 [B, T] (undefined: every key visible; right padding needs none, because causal attention
  // never lets a real token see a later pad). Returns logits [B, T, V].
  Tensor forward(const Tensor& tokens, const Tensor& positions = Tensor(), const Tensor& key_mask = Tensor()) const;

  // Training / scoring forward over a packed batch (model/packed_layout.h): each distinct row computed once.
  // Returns logits [M, V] of layout.output_rows; on the CPU they equal forward()'s logits at those positions
  // of the padded sequences, bit for bit.
  Tensor forward_packed(const PackedLayout& layout) const;

  // Inference with a KV cache (call under NoGradGuard). tokens i32 [B, Tn] are appended at cache.length;
  // positions i32 [B, Tn]; key_mask i32 [B, cache.length + Tn] covers the cached keys and the new ones.
  // Returns logits [B, Tn, V], or [B, 1, V] for the last new position only when last_only.
  // cache_rows (optional, i32 [B], distinct): row b of tokens
  // is row cache_rows[b] of the cache, so that the rows still decoding run as a smaller batch while the
  // cache keeps every row (the others' new positions stay unwritten and must stay masked). Each row's
  // results are the same bits either way.
  Tensor forward_cached(const Tensor& tokens, const Tensor& positions, const Tensor& key_mask, KvCache& cache,
                        bool last_only, const Tensor& cache_rows = Tensor()) const;
  // forward_cached keeps its weights laid out for decoding (decode_weights.h) until the weights change or
  // this is called: a decode loop calls it when it ends, so that training never holds the copies.
  void release_decode_weights() const { decode_weights_.clear(); }

 private:
  struct Layer {
    // gpt2
    Tensor ln_1_w, ln_1_b, c_attn_w, c_attn_b, attn_proj_w, attn_proj_b, ln_2_w, ln_2_b, c_fc_w, c_fc_b,
        mlp_proj_w, mlp_proj_b;
    // llama / qwen2
    Tensor input_norm_w, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, post_norm_w, gate_w, gate_b, up_w, up_b, down_w, down_b;
  };

  // What a forward_cached step appends to: the cache, and the cache rows of its batch entries (all of them,
  // in order, when rows is undefined).
  struct CacheStep {
    KvCache& cache;
    Tensor rows;                     // i32 [B] or undefined
    std::vector<int32_t> rows_host;  // the same, on the host
  };

  Tensor add_param(const std::string& name, const Shape& shape);
  Tensor default_positions(int64_t batch, int64_t length, int64_t start) const;
  // One block; step is null for training. Returns the new residual stream [B, T, C].
  // packed is set for forward_packed (x is then [1, N, C]).
  Tensor block(const Layer& layer, size_t index, const Tensor& x, const Tensor& positions, const Tensor& key_mask,
               const CacheStep* step, const PackedLayout* packed) const;
  Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, const CacheStep* step,
                   size_t index, const PackedLayout* packed) const;
  Tensor logits_from_hidden(const Tensor& hidden) const;

  ModelConfig config_;
  Device device_;
  optim::ParameterStore params_;
  Tensor embed_w_, pos_w_, final_norm_w_, final_norm_b_, lm_head_w_;
  std::vector<Layer> layers_;
  // forward_cached's Linear weights laid out as the backend's GEMM packs them (decode_weights.h).
  mutable DecodeWeights decode_weights_;
  std::vector<int32_t> eos_token_ids_;
  int32_t bos_token_id_ = -1;
};

}  // namespace gtpo::model
