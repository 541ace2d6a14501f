#include "model/transformer.h"

#include <cmath>

#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/random.h"

namespace gtpo::model {

namespace {
std::string layer_prefix(const ModelConfig& c, size_t i) {
  return (c.is_gpt2() ? "transformer.h." : "model.layers.") + std::to_string(i) + ".";
}
}  // namespace

Tensor Transformer::add_param(const std::string& name, const Shape& shape) {
  return params_.add(name, Tensor::zeros(shape, device_));
}

Transformer::Transformer(const ModelConfig& config, Device device) : config_(config), device_(device) {
  validate_model_config(config_, "model config");
  const ModelConfig& c = config_;
  const int64_t C = c.hidden_size, F = c.intermediate_size, V = c.vocab_size;
  const int64_t q_out = c.num_attention_heads * c.head_dim(), kv_out = c.num_key_value_heads * c.head_dim();
  layers_.resize(static_cast<size_t>(c.num_hidden_layers));
  if (c.is_gpt2()) {
    embed_w_ = add_param("transformer.wte.weight", {V, C});
    pos_w_ = add_param("transformer.wpe.weight", {c.max_position_embeddings, C});
    for (size_t i = 0; i < layers_.size(); ++i) {
      const std::string p = layer_prefix(c, i);
      Layer& l = layers_[i];
      l.ln_1_w = add_param(p + "ln_1.weight", {C});
      l.ln_1_b = add_param(p + "ln_1.bias", {C});
      l.c_attn_w = add_param(p + "attn.c_attn.weight", {C, 3 * C});  // Conv1D: [in, out]
      l.c_attn_b = add_param(p + "attn.c_attn.bias", {3 * C});
      l.attn_proj_w = add_param(p + "attn.c_proj.weight", {C, C});
      l.attn_proj_b = add_param(p + "attn.c_proj.bias", {C});
      l.ln_2_w = add_param(p + "ln_2.weight", {C});
      l.ln_2_b = add_param(p + "ln_2.bias", {C});
      l.c_fc_w = add_param(p + "mlp.c_fc.weight", {C, F});
      l.c_fc_b = add_param(p + "mlp.c_fc.bias", {F});
      l.mlp_proj_w = add_param(p + "mlp.c_proj.weight", {F, C});
      l.mlp_proj_b = add_param(p + "mlp.c_proj.bias", {C});
    }
    final_norm_w_ = add_param("transformer.ln_f.weight", {C});
    final_norm_b_ = add_param("transformer.ln_f.bias", {C});
  } else {
    embed_w_ = add_param("model.embed_tokens.weight", {V, C});
    const bool qkv_bias = c.attention_bias;
    const bool o_bias = c.attention_bias && c.architecture == Architecture::llama;
    for (size_t i = 0; i < layers_.size(); ++i) {
      const std::string p = layer_prefix(c, i);
      Layer& l = layers_[i];
      l.input_norm_w = add_param(p + "input_layernorm.weight", {C});
      l.q_w = add_param(p + "self_attn.q_proj.weight", {q_out, C});  // Linear: [out, in]
      if (qkv_bias) l.q_b = add_param(p + "self_attn.q_proj.bias", {q_out});
      l.k_w = add_param(p + "self_attn.k_proj.weight", {kv_out, C});
      if (qkv_bias) l.k_b = add_param(p + "self_attn.k_proj.bias", {kv_out});
      l.v_w = add_param(p + "self_attn.v_proj.weight", {kv_out, C});
      if (qkv_bias) l.v_b = add_param(p + "self_attn.v_proj.bias", {kv_out});
      l.o_w = add_param(p + "self_attn.o_proj.weight", {C, q_out});
      if (o_bias) l.o_b = add_param(p + "self_attn.o_proj.bias", {C});
      l.post_norm_w = add_param(p + "post_attention_layernorm.weight", {C});
      l.gate_w = add_param(p + "mlp.gate_proj.weight", {F, C});
      if (c.mlp_bias) l.gate_b = add_param(p + "mlp.gate_proj.bias", {F});
      l.up_w = add_param(p + "mlp.up_proj.weight", {F, C});
      if (c.mlp_bias) l.up_b = add_param(p + "mlp.up_proj.bias", {F});
      l.down_w = add_param(p + "mlp.down_proj.weight", {C, F});
      if (c.mlp_bias) l.down_b = add_param(p + "mlp.down_proj.bias", {C});
    }
    final_norm_w_ = add_param("model.norm.weight", {C});
  }
  lm_head_w_ = c.tie_word_embeddings ? embed_w_ : add_param("lm_head.weight", {V, C});
}

void Transformer::init_weights(uint64_t seed) {
  const float residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(config_.num_hidden_layers));
  for (const optim::Parameter& p : params_) {
    const std::string& n = p.name;
    const auto ends_with = [&](const char* suffix) { return n.ends_with(suffix); };
    std::vector<float> values(static_cast<size_t>(p.tensor.numel()), 0.0f);
    const bool is_norm = n.find("ln_") != std::string::npos || n.find("layernorm") != std::string::npos ||
                         ends_with("norm.weight");
    if (is_norm && ends_with(".weight")) {
      std::fill(values.begin(), values.end(), 1.0f);
    } else if (ends_with(".weight")) {
      const bool residual_out = ends_with("c_proj.weight") || ends_with("o_proj.weight") || ends_with("down_proj.weight");
      const double std = residual_out ? residual_std : 0.02;
      const uint64_t stream = name_hash(n);
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<float>(std * counter_normal(seed, stream, i));
    }  // biases stay zero
    p.tensor.copy_(Tensor::from_vector(values, p.tensor.shape()));
  }
}

Tensor Transformer::default_positions(int64_t batch, int64_t length, int64_t start) const {
  std::vector<int32_t> pos(static_cast<size_t>(batch * length));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < length; ++t) pos[static_cast<size_t>(b * length + t)] = static_cast<int32_t>(start + t);
  return Tensor::from_ints(pos, Shape{batch, length}, device_);
}

namespace {
// x [1, N, H, D] of a packed batch's rows -> [rows, length, H, D], its sequences right-padded.
Tensor as_sequences(const Tensor& x, const PackedLayout& p) {
  const int64_t N = x.size(1), H = x.size(2), D = x.size(3);
  return ops::reshape(ops::gather_rows(ops::reshape(x, {N, H * D}), p.slot_rows), {p.rows, p.length, H, D});
}
// The inverse: [rows, length, H, D] -> [1, N, H, D], each row from its slot.
Tensor as_rows(const Tensor& x, const PackedLayout& p) {
  const int64_t H = x.size(2), D = x.size(3), N = p.row_slots.numel();
  return ops::reshape(ops::gather_rows(ops::reshape(x, {p.rows * p.length, H * D}), p.row_slots), {1, N, H, D});
}
}  // namespace

Tensor Transformer::attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask,
                              const CacheStep* step, size_t index, const PackedLayout* packed) const {
  if (packed) {  // the queries no row reads (a shared prompt's later copies, padding) are left to the op
    return as_rows(ops::attention(as_sequences(q, *packed), as_sequences(k, *packed),
                                  as_sequences(v, *packed), Tensor(), 0.0f, packed->query_range),
                   *packed);
  }
  if (!step) return ops::attention(q, k, v, key_mask);
  // Append the new keys and values at cache->length (in each batch entry's cache row), then attend over
  // everything cached so far.
  KvCache* cache = &step->cache;
  const int64_t Tn = k.size(1);
  GTPO_CHECK(cache->length + Tn <= cache->capacity, "kv cache: ", cache->length, " cached + ", Tn,
             " new positions exceed its capacity of ", cache->capacity);
  ops::write_positions(cache->keys[index], k, cache->length, step->rows_host);
  ops::write_positions(cache->values[index], v, cache->length, step->rows_host);
  const ops::SharedPrefix prefix =
      cache->prefix_length > 0 ? ops::SharedPrefix{cache->prefix_keys[index], cache->prefix_values[index],
                                                   cache->prefix_length, cache->prefix_group}
                               : ops::SharedPrefix{};
  return ops::attention_cached(q, cache->keys[index], cache->values[index], cache->length + Tn, key_mask, prefix,
                               step->rows);
}

Tensor Transformer::block(const Layer& l, size_t index, const Tensor& x, const Tensor& positions,
                          const Tensor& key_mask, const CacheStep* step, const PackedLayout* packed) const {
  const ModelConfig& c = config_;
  const int64_t B = x.size(0), T = x.size(1), C = c.hidden_size, D = c.head_dim();
  const int64_t Hq = c.num_attention_heads, Hkv = c.num_key_value_heads;
  if (c.is_gpt2()) {
    Tensor h = ops::layer_norm(x, l.ln_1_w, l.ln_1_b, c.norm_eps);
    Tensor qkv = ops::add(ops::matmul(h, l.c_attn_w), l.c_attn_b);  // [B, T, 3C]
    std::vector<Tensor> parts = ops::split(qkv, -1, {C, C, C});
    Tensor q = ops::reshape(parts[0], {B, T, Hq, D});
    Tensor k = ops::reshape(parts[1], {B, T, Hkv, D});
    Tensor v = ops::reshape(parts[2], {B, T, Hkv, D});
    Tensor att = ops::reshape(attention(q, k, v, key_mask, step, index, packed), {B, T, C});
    Tensor x1 = ops::add(x, ops::add(ops::matmul(att, l.attn_proj_w), l.attn_proj_b));
    Tensor h2 = ops::layer_norm(x1, l.ln_2_w, l.ln_2_b, c.norm_eps);
    Tensor mlp = ops::gelu(ops::add(ops::matmul(h2, l.c_fc_w), l.c_fc_b));
    return ops::add(x1, ops::add(ops::matmul(mlp, l.mlp_proj_w), l.mlp_proj_b));
  }
  // Decoding multiplies each weight by a few rows per step: it reads the weights laid out once as the backend's
  // GEMM packs them, where the backend would pack the [out, in] weight on every call (decode_weights.h); the
  // same bits either way.
  auto linear = [&](const Tensor& in, const Tensor& w, const Tensor& b) {
    return step ? decode_weights_.linear(in, w, b) : ops::linear(in, w, b);
  };
  Tensor h = ops::rms_norm(x, l.input_norm_w, c.norm_eps);
  const RopeFrequencies freq = c.rope_frequencies();
  Tensor q = ops::rope(ops::reshape(linear(h, l.q_w, l.q_b), {B, T, Hq, D}), positions, freq);
  Tensor k = ops::rope(ops::reshape(linear(h, l.k_w, l.k_b), {B, T, Hkv, D}), positions, freq);
  Tensor v = ops::reshape(linear(h, l.v_w, l.v_b), {B, T, Hkv, D});
  Tensor att = ops::reshape(attention(q, k, v, key_mask, step, index, packed), {B, T, Hq * D});
  Tensor x1 = ops::add(x, linear(att, l.o_w, l.o_b));
  Tensor h2 = ops::rms_norm(x1, l.post_norm_w, c.norm_eps);
  Tensor gated = ops::swiglu(linear(h2, l.gate_w, l.gate_b), linear(h2, l.up_w, l.up_b));
  return ops::add(x1, linear(gated, l.down_w, l.down_b));
}

Tensor Transformer::logits_from_hidden(const Tensor& hidden) const {
  Tensor h = config_.is_gpt2() ? ops::layer_norm(hidden, final_norm_w_, final_norm_b_, config_.norm_eps)
                               : ops::rms_norm(hidden, final_norm_w_, config_.norm_eps);
  return ops::matmul(h, lm_head_w_, false, true);  // [B, T, V]
}

namespace {
void check_tokens(const char* what, const Tensor& tokens, const ModelConfig& c) {
  GTPO_CHECK(tokens.defined() && tokens.dtype() == DType::i32 && tokens.rank() == 2, what,
             ": tokens must be an i32 [batch, length] tensor, got ", tokens.describe());
  (void)c;
}
}  // namespace

Tensor Transformer::forward(const Tensor& tokens, const Tensor& positions, const Tensor& key_mask) const {
  check_tokens("forward", tokens, config_);
  const int64_t B = tokens.size(0), T = tokens.size(1);
  GTPO_CHECK(T <= config_.max_position_embeddings, "forward: sequence length ", T,
             " exceeds max_position_embeddings ", config_.max_position_embeddings);
  Tensor pos = positions.defined() ? positions : default_positions(B, T, 0);
  GTPO_CHECK(pos.shape() == tokens.shape(), "forward: positions ", pos.describe(), " do not match tokens ",
             tokens.describe());
  Tensor x = ops::embedding(embed_w_, tokens);
  if (config_.is_gpt2()) x = ops::add(x, ops::embedding(pos_w_, pos));
  for (size_t i = 0; i < layers_.size(); ++i) x = block(layers_[i], i, x, pos, key_mask, nullptr, nullptr);
  return logits_from_hidden(x);
}

Tensor Transformer::forward_packed(const PackedLayout& p) const {
  check_tokens("forward_packed", p.tokens, config_);
  const int64_t N = p.tokens.size(1);
  auto check_index = [&](const char* what, const Tensor& t, int64_t size) {
    GTPO_CHECK(t.defined() && t.dtype() == DType::i32 && t.rank() == 1 && (size < 0 || t.size(0) == size),
               "forward_packed: ", what, " must be i32 [", size < 0 ? std::string("M") : std::to_string(size),
               "], got ", t.defined() ? t.describe() : std::string("undefined"));
  };
  GTPO_CHECK(p.tokens.size(0) == 1 && N > 0, "forward_packed: tokens must be i32 [1, N] with N > 0, got ",
             p.tokens.describe());
  GTPO_CHECK(p.positions.defined() && p.positions.shape() == p.tokens.shape(), "forward_packed: positions must be [1, ",
             N, "]");
  GTPO_CHECK(p.rows > 0 && p.length > 0, "forward_packed: ", p.rows, " sequences of length ", p.length);
  GTPO_CHECK(p.length <= config_.max_position_embeddings, "forward_packed: sequence length ", p.length,
             " exceeds max_position_embeddings ", config_.max_position_embeddings);
  check_index("slot_rows", p.slot_rows, p.rows * p.length);
  check_index("row_slots", p.row_slots, N);
  check_index("output_rows", p.output_rows, -1);
  Tensor x = ops::embedding(embed_w_, p.tokens);  // [1, N, C]
  if (config_.is_gpt2()) x = ops::add(x, ops::embedding(pos_w_, p.positions));
  for (size_t i = 0; i < layers_.size(); ++i) x = block(layers_[i], i, x, p.positions, Tensor(), nullptr, &p);
  return logits_from_hidden(ops::gather_rows(ops::reshape(x, {N, config_.hidden_size}), p.output_rows));
}

Tensor Transformer::forward_cached(const Tensor& tokens, const Tensor& positions, const Tensor& key_mask,
                                   KvCache& cache, bool last_only, const Tensor& cache_rows) const {
  check_tokens("forward_cached", tokens, config_);
  const int64_t B = tokens.size(0), Tn = tokens.size(1);
  CacheStep step{cache, cache_rows, {}};
  if (cache_rows.defined()) {
    GTPO_CHECK(cache_rows.dtype() == DType::i32 && cache_rows.rank() == 1 && cache_rows.size(0) == B,
               "forward_cached: cache_rows must be i32 [", B, "] (one per row of tokens), got ", cache_rows.describe());
    step.rows_host = cache_rows.to_int_vector();
    std::vector<bool> seen(static_cast<size_t>(cache.batch), false);
    for (int32_t r : step.rows_host) {
      GTPO_CHECK(r >= 0 && r < cache.batch && !seen[static_cast<size_t>(r)], "forward_cached: cache row ", r,
                 " is outside the cache's ", cache.batch, " rows or named twice");
      seen[static_cast<size_t>(r)] = true;
    }
  } else {
    GTPO_CHECK(B == cache.batch, "forward_cached: batch ", B, " does not match the cache's ", cache.batch);
  }
  GTPO_CHECK(positions.defined() && positions.shape() == tokens.shape(), "forward_cached: positions must be [",
             B, ", ", Tn, "]");
  Tensor x = ops::embedding(embed_w_, tokens);
  if (config_.is_gpt2()) x = ops::add(x, ops::embedding(pos_w_, positions));
  for (size_t i = 0; i < layers_.size(); ++i) x = block(layers_[i], i, x, positions, key_mask, &step, nullptr);
  cache.length += Tn;
  if (last_only && Tn > 1) x = ops::slice(x, 1, Tn - 1, Tn);
  return logits_from_hidden(x);
}

}  // namespace gtpo::model
