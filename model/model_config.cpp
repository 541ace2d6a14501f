#include "model/model_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <sstream>

#include "runtime/error.h"

namespace gtpo::model {

namespace {

const char* const kKeys[] = {"architecture",        "vocab_size",          "hidden_size",
                             "num_hidden_layers",   "num_attention_heads", "num_key_value_heads",
                             "intermediate_size",   "max_position_embeddings", "rms_norm_eps",
                             "layer_norm_epsilon",  "rope_theta",          "tie_word_embeddings",
                             "attention_bias"};

std::string valid_keys() {
  std::string s;
  for (const char* k : kKeys) s += (s.empty() ? "" : ", ") + std::string(k);
  return s;
}

int64_t parse_int(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const long long v = std::stoll(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  fail("model.", key, ": expected an integer, got '", value, "'");
}

float parse_float(const std::string& key, const std::string& value) {
  try {
    size_t used = 0;
    const float v = std::stof(value, &used);
    if (used == value.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  fail("model.", key, ": expected a number, got '", value, "'");
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "True" || value == "1") return true;
  if (value == "false" || value == "False" || value == "0") return false;
  fail("model.", key, ": expected true or false, got '", value, "'");
}

// Per-architecture defaults for keys a config leaves out; -1 / NaN mark "not given".
struct Unset {
  bool heads_kv = true, intermediate = true, eps = true, tie = true, bias = true;
};

}  // namespace

const char* architecture_name(Architecture a) {
  switch (a) {
    case Architecture::gpt2: return "gpt2";
    case Architecture::llama: return "llama";
    case Architecture::qwen2: return "qwen2";
  }
  return "?";
}

namespace {
void apply_defaults(ModelConfig& c, const Unset& unset) {
  if (unset.heads_kv) c.num_key_value_heads = c.num_attention_heads;
  if (unset.intermediate) {
    if (c.is_gpt2())
      c.intermediate_size = 4 * c.hidden_size;
    else
      c.intermediate_size = (8 * c.hidden_size / 3 + 31) / 32 * 32;
  }
  if (unset.eps) c.norm_eps = c.is_gpt2() ? 1e-5f : 1e-6f;
  if (unset.tie) c.tie_word_embeddings = c.is_gpt2();
  if (c.architecture == Architecture::qwen2) c.attention_bias = true;
}

void set_option(ModelConfig& c, Unset& unset, const std::string& key, const std::string& value) {
  if (key == "architecture") {
    if (value == "gpt2")
      c.architecture = Architecture::gpt2;
    else if (value == "llama")
      c.architecture = Architecture::llama;
    else if (value == "qwen2")
      c.architecture = Architecture::qwen2;
    else
      fail("model.architecture: expected gpt2, llama or qwen2, got '", value, "'");
  } else if (key == "vocab_size") {
    c.vocab_size = parse_int(key, value);
  } else if (key == "hidden_size") {
    c.hidden_size = parse_int(key, value);
  } else if (key == "num_hidden_layers") {
    c.num_hidden_layers = parse_int(key, value);
  } else if (key == "num_attention_heads") {
    c.num_attention_heads = parse_int(key, value);
  } else if (key == "num_key_value_heads") {
    c.num_key_value_heads = parse_int(key, value);
    unset.heads_kv = false;
  } else if (key == "intermediate_size") {
    c.intermediate_size = parse_int(key, value);
    unset.intermediate = false;
  } else if (key == "max_position_embeddings") {
    c.max_position_embeddings = parse_int(key, value);
  } else if (key == "rms_norm_eps" || key == "layer_norm_epsilon") {
    c.norm_eps = parse_float(key, value);
    unset.eps = false;
  } else if (key == "rope_theta") {
    c.rope_theta = parse_float(key, value);
  } else if (key == "tie_word_embeddings") {
    c.tie_word_embeddings = parse_bool(key, value);
    unset.tie = false;
  } else if (key == "attention_bias") {
    c.attention_bias = parse_bool(key, value);
    unset.bias = false;
  } else {
    fail("model: unknown key '", key, "'; valid keys: ", valid_keys());
  }
}
}  // namespace

ModelConfig parse_model_config(const YAML::Node& node, const std::string& where) {
  GTPO_CHECK(node && node.IsMap(), where, ": the model section must be a mapping of keys to values");
  ModelConfig c;
  Unset unset;
  // Architecture first: the defaults of other keys depend on it.
  if (node["architecture"]) set_option(c, unset, "architecture", node["architecture"].as<std::string>());
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    GTPO_CHECK(kv.second.IsScalar(), where, ": model.", key, " must be a single value");
    try {
      set_option(c, unset, key, kv.second.as<std::string>());
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
  }
  apply_defaults(c, unset);
  validate_model_config(c, where);
  return c;
}

void set_model_option(ModelConfig& config, const std::string& key, const std::string& value) {
  // Overrides keep the other derived values as they are; architecture-dependent defaults were already
  // applied when the config was parsed.
  Unset unset{false, false, false, false, false};
  set_option(config, unset, key, value);
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
  GTPO_CHECK(c.hidden_size % c.num_attention_heads == 0, where, ": model.hidden_size (", c.hidden_size,
             ") must be divisible by num_attention_heads (", c.num_attention_heads, ")");
  GTPO_CHECK(c.num_attention_heads % c.num_key_value_heads == 0, where, ": model.num_attention_heads (",
             c.num_attention_heads, ") must be divisible by num_key_value_heads (", c.num_key_value_heads, ")");
  GTPO_CHECK(!c.is_gpt2() || c.num_key_value_heads == c.num_attention_heads, where,
             ": model.num_key_value_heads must equal num_attention_heads for gpt2");
  GTPO_CHECK(c.is_gpt2() || c.head_dim() % 2 == 0, where, ": rotary embeddings need an even head dim, got ",
             c.head_dim(), " (hidden_size / num_attention_heads)");
  GTPO_CHECK(c.norm_eps > 0.0f, where, ": the norm epsilon must be positive");
  GTPO_CHECK(c.rope_theta > 0.0f, where, ": model.rope_theta must be positive");
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
  return os.str();
}

}  // namespace gtpo::model
