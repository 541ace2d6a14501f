#include "model/model_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "model/memory_estimate.h"
#include "runtime/error.h"

namespace gtpo::model {

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::gpt2: return "gpt2";
    case Architecture::llama: return "llama";
    case Architecture::qwen2: return "qwen2";
  }
  return "?";
}

namespace {

config::Codec<float> positive_float() {
  const config::Codec<double> d = config::number(0, std::numeric_limits<double>::infinity(), true);
  return {d.type, [d](const std::string& v) { return static_cast<float>(d.parse(v)); },
          [d](const float& x) { return d.print(static_cast<double>(x)); }};
}

std::vector<ModelKey> build_keys() {
  using config::field;
  const auto size = config::integer<int64_t>(1);
  const auto eps = positive_float();
  std::vector<ModelKey> k = {
      field("model", "architecture", &ModelConfig::architecture,
            config::choice<Architecture>(
                {{"gpt2", Architecture::gpt2}, {"llama", Architecture::llama}, {"qwen2", Architecture::qwen2}}),
            "transformer family"),
      field("model", "vocab_size", &ModelConfig::vocab_size, size,
            "vocabulary size; leave it out to use the tokenizer's"),
      field("model", "hidden_size", &ModelConfig::hidden_size, size, "model width"),
      field("model", "num_hidden_layers", &ModelConfig::num_hidden_layers, size, "transformer blocks"),
      field("model", "num_attention_heads", &ModelConfig::num_attention_heads, size,
            "query heads; must divide hidden_size"),
      field("model", "num_key_value_heads", &ModelConfig::num_key_value_heads, size,
            "key/value heads (grouped-query attention); gpt2 needs num_attention_heads"),
      field("model", "intermediate_size", &ModelConfig::intermediate_size, size, "MLP width"),
      field("model", "max_position_embeddings", &ModelConfig::max_position_embeddings, size,
            "longest sequence: prompt plus response"),
      field("model", "rms_norm_eps", &ModelConfig::norm_eps, eps, "RMSNorm ε (llama, qwen2)"),
      field("model", "layer_norm_epsilon", &ModelConfig::norm_eps, eps,
            "LayerNorm ε (gpt2); the same setting as rms_norm_eps"),
      field("model", "rope_theta", &ModelConfig::rope_theta, eps, "rotary embedding base (llama, qwen2)"),
      field("model", "tie_word_embeddings", &ModelConfig::tie_word_embeddings, config::boolean(),
            "output layer shares the embedding"),
      field("model", "attention_bias", &ModelConfig::attention_bias, config::boolean(),
            "llama: biases on q, k, v, o; qwen2 always has q, k, v biases, gpt2 all biases"),
      field("model", "mlp_bias", &ModelConfig::mlp_bias, config::boolean(),
            "llama: biases on the MLP's gate, up and down projections"),
      field("model", "head_dim", &ModelConfig::explicit_head_dim, size,
            "llama: attention head width when it is not hidden_size / num_attention_heads"),
      field("model", "rope_scaling_type", &ModelConfig::rope_scaling,
            config::choice<RopeScaling>(
                {{"none", RopeScaling::none}, {"linear", RopeScaling::linear}, {"llama3", RopeScaling::llama3}}),
            "rotary frequency rescaling (HF rope_scaling.rope_type): linear divides every frequency by the "
            "factor, llama3 is Llama 3.1's per-frequency rule"),
      field("model", "rope_scaling_factor", &ModelConfig::rope_scaling_factor, config::number(0, 1e9, true),
            "rope_scaling.factor (linear, llama3)"),
      field("model", "rope_scaling_low_freq_factor", &ModelConfig::rope_scaling_low_freq_factor,
            config::number(0, 1e9, true), "rope_scaling.low_freq_factor (llama3)"),
      field("model", "rope_scaling_high_freq_factor", &ModelConfig::rope_scaling_high_freq_factor,
            config::number(0, 1e9, true), "rope_scaling.high_freq_factor (llama3)"),
      field("model", "rope_scaling_original_max_position_embeddings",
            &ModelConfig::rope_scaling_original_max_position_embeddings, size,
            "rope_scaling.original_max_position_embeddings (llama3)"),
  };
  // Defaults that depend on other keys, as the docs show them.
  const std::vector<std::pair<std::string, std::string>> derived = {
      {"architecture", "llama"},
      {"vocab_size", "the tokenizer's"},
      {"hidden_size", "required"},
      {"num_hidden_layers", "required"},
      {"num_attention_heads", "required"},
      {"num_key_value_heads", "num_attention_heads"},
      {"intermediate_size", "4·hidden_size (gpt2), 8·hidden_size/3 rounded up to 32"},
      {"max_position_embeddings", "required"},
      {"rms_norm_eps", "1e-6"},
      {"layer_norm_epsilon", "1e-5"},
      {"rope_theta", "10000"},
      {"tie_word_embeddings", "true for gpt2, else false"},
      {"attention_bias", "false"},
      {"mlp_bias", "false"},
      {"head_dim", "hidden_size / num_attention_heads"},
      {"rope_scaling_type", "none"},
      {"rope_scaling_factor", "1"},
      {"rope_scaling_low_freq_factor", "1"},
      {"rope_scaling_high_freq_factor", "4"},
      {"rope_scaling_original_max_position_embeddings", "8192"}};
  for (ModelKey& key : k)
    for (const auto& [name, text] : derived)
      if (key.name == name) key.default_doc = text;
  return k;
}

// The keys whose defaults follow the architecture or other keys, applied when a config leaves them out.
void apply_defaults(ModelConfig& c, const std::set<std::string>& given) {
  const auto unset = [&](const char* key) { return given.count(key) == 0; };
  if (unset("num_key_value_heads")) c.num_key_value_heads = c.num_attention_heads;
  if (unset("intermediate_size")) {
    // An absurd hidden_size saturates here instead of overflowing (found by fuzz_run_config);
    // validate_model_config then rejects the model, naming its size keys.
    if (c.hidden_size > std::numeric_limits<int64_t>::max() / 8)
      c.intermediate_size = std::numeric_limits<int64_t>::max();
    else if (c.is_gpt2())
      c.intermediate_size = 4 * c.hidden_size;
    else
      c.intermediate_size = (8 * c.hidden_size / 3 + 31) / 32 * 32;
  }
  if (unset("rms_norm_eps") && unset("layer_norm_epsilon")) c.norm_eps = c.is_gpt2() ? 1e-5f : 1e-6f;
  if (unset("tie_word_embeddings")) c.tie_word_embeddings = c.is_gpt2();
  if (c.architecture == Architecture::qwen2) c.attention_bias = true;
}

}  // namespace

const std::vector<ModelKey>& model_keys() {
  static const std::vector<ModelKey> all = build_keys();
  return all;
}

RopeFrequencies ModelConfig::rope_frequencies() const {
  RopeFrequencies f(rope_theta);
  f.scaling = rope_scaling;
  f.factor = rope_scaling_factor;
  f.low_freq_factor = rope_scaling_low_freq_factor;
  f.high_freq_factor = rope_scaling_high_freq_factor;
  f.original_max_position = static_cast<double>(rope_scaling_original_max_position_embeddings);
  return f;
}

ModelConfig model_config_from_values(const std::vector<io::ConfigValue>& values, const std::string& where) {
  ModelConfig c;
  std::set<std::string> given;
  const auto apply = [&](const io::ConfigValue& v) {
    const ModelKey* key = nullptr;
    for (const ModelKey& k : model_keys())
      if (k.name == v.key) key = &k;
    if (key == nullptr) {
      std::vector<std::string> names;
      for (const ModelKey& k : model_keys()) names.push_back(k.name);
      fail(v.where, ": unknown key '", v.key, "' in section 'model'", config::did_you_mean(v.key, names),
           "; valid keys: ", config::join(names));
    }
    try {
      key->set(c, v.value);
    } catch (const Error& e) {
      fail(v.where, ": model.", v.key, ": ", e.what());
    }
    given.insert(v.key);
  };
  // Architecture first: the defaults of other keys depend on it.
  for (const io::ConfigValue& v : values)
    if (v.key == "architecture") apply(v);
  for (const io::ConfigValue& v : values)
    if (v.key != "architecture") apply(v);
  apply_defaults(c, given);
  validate_model_config(c, where);
  return c;
}

ModelConfig parse_model_config(const YAML::Node& node, const std::string& where) {
  GTPO_CHECK(node && node.IsMap(), where, ": the model section must be a mapping of keys to values");
  return model_config_from_values(io::read_yaml_section(node, where, "model"), where);
}

void validate_model_config(const ModelConfig& c, const std::string& where) {
  auto positive = [&](const char* key, int64_t v) {
    GTPO_CHECK(v > 0, where, ": model.", key, " must be a positive integer, got ", v);
  };
  positive("vocab_size", c.vocab_size);
  positive("hidden_size", c.hidden_size);
  positive("num_hidden_layers", c.num_hidden_layers);
  positive("num_attention_heads", c.num_attention_heads);
  positive("num_key_value_heads", c.num_key_value_heads);
  positive("intermediate_size", c.intermediate_size);
  positive("max_position_embeddings", c.max_position_embeddings);
  GTPO_CHECK(c.explicit_head_dim == 0 || c.architecture == Architecture::llama ||
                 c.explicit_head_dim * c.num_attention_heads == c.hidden_size,
             where, ": model.head_dim (", c.explicit_head_dim, ") other than hidden_size / num_attention_heads is ",
             "supported for llama only");
  GTPO_CHECK(!c.mlp_bias || c.architecture == Architecture::llama, where,
             ": model.mlp_bias is supported for llama only (qwen2's MLP has no biases; gpt2's always has them)");
  GTPO_CHECK(c.rope_scaling == RopeScaling::none || !c.is_gpt2(), where,
             ": model.rope_scaling_type: gpt2 has no rotary embeddings");
  GTPO_CHECK(c.rope_scaling != RopeScaling::llama3 ||
                 c.rope_scaling_high_freq_factor > c.rope_scaling_low_freq_factor,
             where, ": model.rope_scaling_high_freq_factor (", c.rope_scaling_high_freq_factor,
             ") must be larger than rope_scaling_low_freq_factor (", c.rope_scaling_low_freq_factor, ")");
  GTPO_CHECK(c.explicit_head_dim > 0 || c.hidden_size % c.num_attention_heads == 0, where, ": model.hidden_size (", c.hidden_size,
             ") must be divisible by num_attention_heads (", c.num_attention_heads, ")");
  GTPO_CHECK(c.num_attention_heads % c.num_key_value_heads == 0, where, ": model.num_attention_heads (",
             c.num_attention_heads, ") must be divisible by num_key_value_heads (", c.num_key_value_heads, ")");
  GTPO_CHECK(!c.is_gpt2() || c.num_key_value_heads == c.num_attention_heads, where,
             ": model.num_key_value_heads must equal num_attention_heads for gpt2");
  GTPO_CHECK(c.is_gpt2() || c.head_dim() % 2 == 0, where, ": rotary embeddings need an even head dim, got ",
             c.head_dim(), " (hidden_size / num_attention_heads)");
  GTPO_CHECK(c.norm_eps > 0.0f, where, ": the norm epsilon must be positive");
  GTPO_CHECK(c.rope_theta > 0.0f, where, ": model.rope_theta must be positive");
  // Before allocating: f32 weights (an upper estimate of the parameter count) must fit in memory, or a size
  // typed with too many digits ends in std::bad_alloc instead of an error naming the keys.
  const double C = static_cast<double>(c.hidden_size), F = static_cast<double>(c.intermediate_size);
  const double V = static_cast<double>(c.vocab_size), P = static_cast<double>(c.max_position_embeddings);
  // Attention works in num_attention_heads x head_dim (and the key-value heads), which need not be
  // hidden_size: q, k, v, o with their biases, the MLP, the norms.
  const double q_width = static_cast<double>(c.num_attention_heads) * static_cast<double>(c.head_dim());
  const double kv_width = static_cast<double>(c.num_key_value_heads) * static_cast<double>(c.head_dim());
  const double per_layer =
      2.0 * C * q_width + 2.0 * C * kv_width + q_width + 2.0 * kv_width + 3.0 * C * F + 8.0 * C;
  const double weight_bytes = 4.0 * (2.0 * V * C + P * C + static_cast<double>(c.num_hidden_layers) * per_layer);
  const double have = physical_memory_bytes();
  GTPO_CHECK(have == 0.0 || weight_bytes < have, where, ": the model's weights alone need about ",
             weight_bytes / (1024.0 * 1024.0 * 1024.0), " GiB (model.vocab_size ", c.vocab_size,
             ", hidden_size ", c.hidden_size, ", num_attention_heads ", c.num_attention_heads, ", head_dim ",
             c.head_dim(), ", num_hidden_layers ", c.num_hidden_layers, ", intermediate_size ",
             c.intermediate_size, ", max_position_embeddings ", c.max_position_embeddings,
             "), more than this machine's ", have / (1024.0 * 1024.0 * 1024.0), " GiB of memory");
}

std::string model_config_to_yaml(const ModelConfig& c) {
  std::ostringstream os;
  os.precision(9);
  os << "model:\n";
  os << "  architecture: " << architecture_name(c.architecture) << "\n";
  os << "  vocab_size: " << c.vocab_size << "\n";
  os << "  hidden_size: " << c.hidden_size << "\n";
  os << "  num_hidden_layers: " << c.num_hidden_layers << "\n";
  os << "  num_attention_heads: " << c.num_attention_heads << "\n";
  os << "  num_key_value_heads: " << c.num_key_value_heads << "\n";
  os << "  intermediate_size: " << c.intermediate_size << "\n";
  os << "  max_position_embeddings: " << c.max_position_embeddings << "\n";
  os << "  " << (c.is_gpt2() ? "layer_norm_epsilon: " : "rms_norm_eps: ") << c.norm_eps << "\n";
  if (!c.is_gpt2()) os << "  rope_theta: " << c.rope_theta << "\n";
  os << "  tie_word_embeddings: " << (c.tie_word_embeddings ? "true" : "false") << "\n";
  if (!c.is_gpt2()) os << "  attention_bias: " << (c.attention_bias ? "true" : "false") << "\n";
  // Written only when set, so checkpoints of models without them keep their config.yaml as before.
  if (c.mlp_bias) os << "  mlp_bias: true\n";
  if (c.explicit_head_dim > 0) os << "  head_dim: " << c.explicit_head_dim << "\n";
  if (c.rope_scaling != RopeScaling::none) {
    os << "  rope_scaling_type: " << (c.rope_scaling == RopeScaling::linear ? "linear" : "llama3") << "\n";
    os << "  rope_scaling_factor: " << config::format_double(c.rope_scaling_factor) << "\n";
    if (c.rope_scaling == RopeScaling::llama3) {
      os << "  rope_scaling_low_freq_factor: " << config::format_double(c.rope_scaling_low_freq_factor) << "\n";
      os << "  rope_scaling_high_freq_factor: " << config::format_double(c.rope_scaling_high_freq_factor) << "\n";
      os << "  rope_scaling_original_max_position_embeddings: " << c.rope_scaling_original_max_position_embeddings
         << "\n";
    }
  }
  return os.str();
}

}  // namespace gtpo::model
