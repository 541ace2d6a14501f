#include "model/hf_config.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "runtime/config_codec.h"
#include "runtime/error.h"
#include "runtime/io/json_parse.h"

namespace gtpo::model {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// Keys of PretrainedConfig and of the three architectures that do not change the forward pass in
// evaluation: generation defaults, dropout (off at inference), initialisation, bookkeeping.
const std::set<std::string>& ignored_keys() {
  static const std::set<std::string> keys = {
      "_name_or_path", "transformers_version", "use_cache", "initializer_range", "torch_dtype", "pad_token_id",
      "sep_token_id", "decoder_start_token_id", "attention_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
      "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels", "summary_first_dropout",
      "task_specific_params", "pretraining_tp", "reorder_and_upcast_attn", "n_ctx", "return_dict",
      "output_hidden_states", "output_attentions", "torchscript", "use_bfloat16", "tf_legacy_loss",
      "pruned_heads", "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder", "cross_attention_hidden_size",
      "tie_encoder_decoder", "finetuning_task", "id2label", "label2id", "tokenizer_class", "prefix",
      "problem_type", "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
      "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
      "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
      "num_return_sequences", "output_scores", "return_dict_in_generate", "forced_bos_token_id",
      "forced_eos_token_id", "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens",
      "begin_suppress_tokens", "architectures", "model_type", "_attn_implementation",
      "_attn_implementation_autoset", "attn_implementation", "gradient_checkpointing"};
  return keys;
}

struct Reader {
  const json& root;
  std::string path;
  std::set<std::string> used;

  // The value of KEY, or nullptr when absent or null (transformers writes null for "use the default").
  const json* get(const std::string& key) {
    used.insert(key);
    auto it = root.find(key);
    return it == root.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void bad(const std::string& key, const std::string& expected, const json& got) const {
    fail(path, ": key '", key, "': expected ", expected, ", got ", got.dump());
  }
  int64_t integer(const std::string& key, int64_t fallback, int64_t lowest = 1) {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_number_integer() || v->get<int64_t>() < lowest)
      bad(key, lowest == 1 ? "a positive integer" : "a non-negative integer", *v);
    return v->get<int64_t>();
  }
  double number(const std::string& key, double fallback) {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_number() || !std::isfinite(v->get<double>())) bad(key, "a number", *v);
    return v->get<double>();
  }
  bool boolean(const std::string& key, bool fallback) {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_boolean()) bad(key, "true or false", *v);
    return v->get<bool>();
  }
  std::string text(const std::string& key, const std::string& fallback) {
    const json* v = get(key);
    if (!v) return fallback;
    if (!v->is_string()) bad(key, "a string", *v);
    return v->get<std::string>();
  }
  // A key whose only supported value is its default: anything else is refused, naming what gtpo does.
  void require_bool(const std::string& key, bool supported, const std::string& why) {
    if (boolean(key, supported) != supported)
      fail(path, ": key '", key, "' = ", supported ? "false" : "true", " is not supported: ", why);
  }
};

int32_t token_id(const json& v, const std::string& path, const std::string& key) {
  GTPO_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
             path, ": key '", key, "': expected a token id (a non-negative integer) or a list of them, got ", v.dump());
  return static_cast<int32_t>(v.get<int64_t>());
}

// One id or a list of ids; null or absent gives none.
std::vector<int32_t> token_ids(const json& root, const std::string& key, const std::string& path) {
  std::vector<int32_t> out;
  auto it = root.find(key);
  if (it == root.end() || it->is_null()) return out;
  if (it->is_array()) {
    for (const json& v : *it) out.push_back(token_id(v, path, key));
  } else {
    out.push_back(token_id(*it, path, key));
  }
  return out;
}

Architecture read_architecture(Reader& r) {
  struct Known {
    const char* model_type;
    const char* class_name;
    Architecture arch;
  };
  static const Known known[] = {{"gpt2", "GPT2LMHeadModel", Architecture::gpt2},
                                {"llama", "LlamaForCausalLM", Architecture::llama},
                                {"qwen2", "Qwen2ForCausalLM", Architecture::qwen2}};
  const std::string supported = "supported: GPT2LMHeadModel (gpt2), LlamaForCausalLM (llama), Qwen2ForCausalLM (qwen2)";
  const std::string model_type = r.text("model_type", "");
  const Known* by_type = nullptr;
  if (!model_type.empty()) {
    for (const Known& k : known)
      if (model_type == k.model_type) by_type = &k;
    GTPO_CHECK(by_type != nullptr, r.path, ": key 'model_type' = \"", model_type, "\" is not supported; ", supported);
  }
  const Known* by_class = nullptr;
  if (const json* a = r.get("architectures")) {
    GTPO_CHECK(a->is_array(), r.path, ": key 'architectures': expected a list of class names, got ", a->dump());
    for (const json& name : *a) {
      GTPO_CHECK(name.is_string(), r.path, ": key 'architectures': expected class names, got ", name.dump());
      const Known* found = nullptr;
      for (const Known& k : known)
        if (name.get<std::string>() == k.class_name) found = &k;
      GTPO_CHECK(found != nullptr, r.path, ": key 'architectures' names ", name.dump(), ", which gtpo does not implement; ",
                 supported);
      GTPO_CHECK(by_class == nullptr || by_class == found, r.path, ": key 'architectures' names two families");
      by_class = found;
    }
  }
  GTPO_CHECK(by_type || by_class, r.path, ": neither 'model_type' nor 'architectures' is given; ", supported);
  GTPO_CHECK(!by_type || !by_class || by_type == by_class, r.path, ": key 'model_type' = \"", model_type,
             "\" does not match key 'architectures' (", by_class->class_name, ")");
  return (by_type ? by_type : by_class)->arch;
}

void read_rope_scaling(Reader& r, ModelConfig& c) {
  const json* s = r.get("rope_scaling");
  if (!s) return;
  const std::string key = "rope_scaling";
  GTPO_CHECK(s->is_object(), r.path, ": key 'rope_scaling': expected null or a mapping, got ", s->dump());
  std::string type;
  for (const char* name : {"rope_type", "type"}) {
    auto it = s->find(name);
    if (it == s->end() || it->is_null()) continue;
    GTPO_CHECK(it->is_string(), r.path, ": key 'rope_scaling.", name, "': expected a string, got ", it->dump());
    GTPO_CHECK(type.empty() || type == it->get<std::string>(), r.path,
               ": keys 'rope_scaling.rope_type' and 'rope_scaling.type' disagree");
    type = it->get<std::string>();
  }
  GTPO_CHECK(!type.empty(), r.path, ": key 'rope_scaling' has no 'rope_type' (or 'type')");
  const auto field = [&](const char* name, bool required, double fallback) {
    auto it = s->find(name);
    if (it == s->end() || it->is_null()) {
      GTPO_CHECK(!required, r.path, ": key 'rope_scaling.", name, "' is missing (required for rope_type \"", type, "\")");
      return fallback;
    }
    GTPO_CHECK(it->is_number() && it->get<double>() > 0 && std::isfinite(it->get<double>()), r.path,
               ": key 'rope_scaling.", name, "': expected a positive number, got ", it->dump());
    return it->get<double>();
  };
  std::set<std::string> allowed = {"rope_type", "type"};
  if (type == "default") {
  } else if (type == "linear") {
    c.rope_scaling = RopeScaling::linear;
    c.rope_scaling_factor = field("factor", true, 1.0);
    allowed.insert("factor");
  } else if (type == "llama3") {
    c.rope_scaling = RopeScaling::llama3;
    c.rope_scaling_factor = field("factor", true, 1.0);
    c.rope_scaling_low_freq_factor = field("low_freq_factor", true, 1.0);
    c.rope_scaling_high_freq_factor = field("high_freq_factor", true, 4.0);
    const double original = field("original_max_position_embeddings", true, 8192.0);
    GTPO_CHECK(original == std::floor(original), r.path,
               ": key 'rope_scaling.original_max_position_embeddings': expected an integer");
    c.rope_scaling_original_max_position_embeddings = static_cast<int64_t>(original);
    allowed.insert({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  } else {
    fail(r.path, ": key 'rope_scaling.rope_type' = \"", type,
         "\" is not supported; supported: null, \"default\", \"linear\", \"llama3\"");
  }
  for (const auto& [name, value] : s->items())
    GTPO_CHECK(allowed.count(name) || value.is_null(), r.path, ": key '", key, ".", name,
               "' is not supported with rope_type \"", type, "\" (gtpo would ignore it and compute another model)");
}

void read_gpt2(Reader& r, ModelConfig& c) {
  c.vocab_size = r.integer("vocab_size", 50257);
  c.hidden_size = r.integer("n_embd", 768);
  c.num_hidden_layers = r.integer("n_layer", 12);
  c.num_attention_heads = r.integer("n_head", 12);
  c.num_key_value_heads = c.num_attention_heads;
  c.intermediate_size = r.integer("n_inner", 4 * c.hidden_size);
  c.max_position_embeddings = r.integer("n_positions", 1024);
  c.norm_eps = static_cast<float>(r.number("layer_norm_epsilon", 1e-5));
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", true);
  const std::string act = r.text("activation_function", "gelu_new");
  GTPO_CHECK(act == "gelu_new" || act == "gelu_pytorch_tanh", r.path, ": key 'activation_function' = \"", act,
             "\" is not supported; supported: \"gelu_new\" (and its equal \"gelu_pytorch_tanh\")");
  r.require_bool("scale_attn_weights", true, "gtpo always scales attention scores by 1/sqrt(head_dim)");
  r.require_bool("scale_attn_by_inverse_layer_idx", false, "gtpo does not scale attention by the layer index");
  r.require_bool("add_cross_attention", false, "gtpo models are decoder-only");
}

void read_llama_qwen2(Reader& r, ModelConfig& c) {
  const bool llama = c.architecture == Architecture::llama;
  c.vocab_size = r.integer("vocab_size", llama ? 32000 : 151936);
  c.hidden_size = r.integer("hidden_size", 4096);
  c.intermediate_size = r.integer("intermediate_size", llama ? 11008 : 22016);
  c.num_hidden_layers = r.integer("num_hidden_layers", 32);
  c.num_attention_heads = r.integer("num_attention_heads", 32);
  c.num_key_value_heads = r.integer("num_key_value_heads", c.num_attention_heads);
  c.max_position_embeddings = r.integer("max_position_embeddings", llama ? 2048 : 32768);
  c.norm_eps = static_cast<float>(r.number("rms_norm_eps", 1e-6));
  c.rope_theta = static_cast<float>(r.number("rope_theta", 10000.0));
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  const std::string act = r.text("hidden_act", "silu");
  GTPO_CHECK(act == "silu", r.path, ": key 'hidden_act' = \"", act, "\" is not supported; supported: \"silu\"");
  const double partial = r.number("partial_rotary_factor", 1.0);
  GTPO_CHECK(partial == 1.0, r.path, ": key 'partial_rotary_factor' = ", partial,
             " is not supported; gtpo rotates the whole head (1.0)");
  const int64_t derived_head_dim = c.hidden_size / c.num_attention_heads;
  const int64_t head_dim = r.integer("head_dim", derived_head_dim);
  if (llama) {
    c.attention_bias = r.boolean("attention_bias", false);
    c.mlp_bias = r.boolean("mlp_bias", false);
    if (head_dim != derived_head_dim || c.hidden_size % c.num_attention_heads != 0) c.explicit_head_dim = head_dim;
  } else {
    c.attention_bias = true;  // Qwen2Attention: q, k, v biases always
    GTPO_CHECK(head_dim == derived_head_dim && c.hidden_size % c.num_attention_heads == 0, r.path, ": key 'head_dim' = ",
               head_dim, " is not supported for qwen2, whose attention uses hidden_size / num_attention_heads (",
               derived_head_dim, ")");
    GTPO_CHECK(!r.boolean("mlp_bias", false), r.path, ": key 'mlp_bias' = true is not supported for qwen2");
    GTPO_CHECK(r.boolean("attention_bias", true), r.path,
               ": key 'attention_bias' = false is not supported for qwen2 (Qwen2Attention always has q, k, v biases)");
    // Transformers 4.45 applies the window only with use_sliding_window, to layers >= max_window_layers, and
    // only to sequences longer than the window.
    const bool use_window = r.boolean("use_sliding_window", false);
    const int64_t window = r.integer("sliding_window", 0);
    const int64_t window_layers = r.integer("max_window_layers", c.num_hidden_layers, 0);
    GTPO_CHECK(!use_window || window == 0 || window >= c.max_position_embeddings || window_layers >= c.num_hidden_layers,
               r.path, ": key 'use_sliding_window' = true with sliding_window ", window, " < max_position_embeddings ",
               c.max_position_embeddings, " on layers from max_window_layers ", window_layers,
               " is not supported; gtpo attends over the whole sequence (use_sliding_window false)");
  }
  read_rope_scaling(r, c);
}

}  // namespace

HfModelConfig parse_hf_config(const std::string& text, const std::string& path) {
  const json root = io::parse_json_or_fail(text, path + ": not valid JSON: ");
  GTPO_CHECK(root.is_object(), path, ": expected a JSON object of config keys");
  Reader r{root, path, {}};
  GTPO_CHECK(!r.get("quantization_config"), path,
             ": key 'quantization_config' is not supported; gtpo reads F32, BF16 and F16 weights");
  HfModelConfig out;
  ModelConfig& c = out.config;
  c.architecture = read_architecture(r);
  if (c.is_gpt2())
    read_gpt2(r, c);
  else
    read_llama_qwen2(r, c);
  for (const char* key : {"bos_token_id", "eos_token_id"}) r.used.insert(key);
  const std::vector<int32_t> bos = token_ids(root, "bos_token_id", path);
  GTPO_CHECK(bos.size() <= 1, path, ": key 'bos_token_id': expected one token id, got a list");
  if (!bos.empty()) out.bos_token_id = bos[0];
  out.eos_token_ids = token_ids(root, "eos_token_id", path);

  std::vector<std::string> unknown;
  for (const auto& [key, value] : root.items())
    if (!r.used.count(key) && !ignored_keys().count(key)) unknown.push_back(key);
  if (!unknown.empty())
    std::fprintf(stderr, "%s: ignoring keys gtpo does not know (they are not read): %s\n", path.c_str(),
                 config::join(unknown).c_str());
  try {
    validate_model_config(c, path);
  } catch (const Error& e) {
    fail(e.what(), " (read from ", path, ")");
  }
  return out;
}

GenerationIds parse_generation_config(const std::string& text, const std::string& path) {
  const json root = io::parse_json_or_fail(text, path + ": not valid JSON: ");
  GTPO_CHECK(root.is_object(), path, ": expected a JSON object");
  GenerationIds out;
  const std::vector<int32_t> bos = token_ids(root, "bos_token_id", path);
  GTPO_CHECK(bos.size() <= 1, path, ": key 'bos_token_id': expected one token id, got a list");
  if (!bos.empty()) out.bos_token_id = bos[0];
  out.eos_token_ids = token_ids(root, "eos_token_id", path);
  return out;
}

namespace {
// The shortest decimal that reads back as the same float: 1e-05, not 9.999999747378752e-06.
double short_decimal(float f) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, f);
  return std::stod(std::string(buf, res.ptr));
}
ordered_json ids_json(int32_t bos) { return bos >= 0 ? ordered_json(bos) : ordered_json(nullptr); }
ordered_json ids_json(const std::vector<int32_t>& eos) {
  if (eos.empty()) return nullptr;
  if (eos.size() == 1) return eos[0];
  return eos;
}
}  // namespace

std::string hf_config_json(const ModelConfig& c, int32_t bos, const std::vector<int32_t>& eos,
                           const std::string& torch_dtype) {
  ordered_json j;
  if (c.is_gpt2()) {
    j["activation_function"] = "gelu_new";
    j["architectures"] = {"GPT2LMHeadModel"};
    j["attn_pdrop"] = 0.0;
    j["bos_token_id"] = ids_json(bos);
    j["embd_pdrop"] = 0.0;
    j["eos_token_id"] = ids_json(eos);
    j["layer_norm_epsilon"] = short_decimal(c.norm_eps);
    j["model_type"] = "gpt2";
    j["n_ctx"] = c.max_position_embeddings;
    j["n_embd"] = c.hidden_size;
    j["n_head"] = c.num_attention_heads;
    j["n_inner"] = c.intermediate_size;
    j["n_layer"] = c.num_hidden_layers;
    j["n_positions"] = c.max_position_embeddings;
    j["resid_pdrop"] = 0.0;
    j["scale_attn_by_inverse_layer_idx"] = false;
    j["scale_attn_weights"] = true;
    j["tie_word_embeddings"] = c.tie_word_embeddings;
  } else {
    const bool llama = c.architecture == Architecture::llama;
    j["architectures"] = {llama ? "LlamaForCausalLM" : "Qwen2ForCausalLM"};
    if (llama) j["attention_bias"] = c.attention_bias;
    j["attention_dropout"] = 0.0;
    j["bos_token_id"] = ids_json(bos);
    j["eos_token_id"] = ids_json(eos);
    if (llama) j["head_dim"] = c.head_dim();
    j["hidden_act"] = "silu";
    j["hidden_size"] = c.hidden_size;
    j["intermediate_size"] = c.intermediate_size;
    j["max_position_embeddings"] = c.max_position_embeddings;
    if (!llama) j["max_window_layers"] = c.num_hidden_layers;
    if (llama) j["mlp_bias"] = c.mlp_bias;
    j["model_type"] = llama ? "llama" : "qwen2";
    j["num_attention_heads"] = c.num_attention_heads;
    j["num_hidden_layers"] = c.num_hidden_layers;
    j["num_key_value_heads"] = c.num_key_value_heads;
    j["rms_norm_eps"] = short_decimal(c.norm_eps);
    if (c.rope_scaling == RopeScaling::none) {
      j["rope_scaling"] = nullptr;
    } else if (c.rope_scaling == RopeScaling::linear) {
      j["rope_scaling"] = {{"factor", c.rope_scaling_factor}, {"rope_type", "linear"}};
    } else {
      j["rope_scaling"] = {{"factor", c.rope_scaling_factor},
                           {"high_freq_factor", c.rope_scaling_high_freq_factor},
                           {"low_freq_factor", c.rope_scaling_low_freq_factor},
                           {"original_max_position_embeddings", c.rope_scaling_original_max_position_embeddings},
                           {"rope_type", "llama3"}};
    }
    j["rope_theta"] = short_decimal(c.rope_theta);
    if (!llama) j["sliding_window"] = nullptr;
    j["tie_word_embeddings"] = c.tie_word_embeddings;
  }
  j["torch_dtype"] = torch_dtype;
  j["use_cache"] = true;
  if (!c.is_gpt2() && c.architecture == Architecture::qwen2) j["use_sliding_window"] = false;
  j["vocab_size"] = c.vocab_size;
  return j.dump(2) + "\n";
}

std::string hf_generation_config_json(int32_t bos, const std::vector<int32_t>& eos) {
  ordered_json j;
  if (bos >= 0) j["bos_token_id"] = bos;
  if (!eos.empty()) j["eos_token_id"] = ids_json(eos);
  if (j.empty()) j = ordered_json::object();
  return j.dump(2) + "\n";
}

}  // namespace gtpo::model
