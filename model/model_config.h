// The transformer's shape, read from a YAML `model:` section whose keys follow Hugging Face config names.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config_codec.h"
#include "runtime/io/yaml_config.h"
#include "runtime/rope_frequencies.h"

namespace YAML {
class Node;
}

namespace gtpo::model {

enum class Architecture { gpt2, llama, qwen2 };

struct ModelConfig {
  Architecture architecture = Architecture::llama;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads
  int64_t intermediate_size = 0;    // defaults to 4 * hidden_size (gpt2) or the Llama 8/3 rule rounded to 32
  int64_t max_position_embeddings = 0;
  float norm_eps = 0.0f;            // rms_norm_eps (llama, qwen2; default 1e-6) or layer_norm_epsilon (gpt2; 1e-5)
  float rope_theta = 10000.0f;
  bool tie_word_embeddings = false;  // default true for gpt2, false for llama/qwen2
  // llama: biases on q, k, v and o projections when true (HF LlamaAttention); qwen2: q, k, v biases always,
  // none on o (HF Qwen2Attention), so the key is ignored; gpt2 always has biases.
  bool attention_bias = false;
  // llama: biases on gate, up and down projections (HF LlamaMLP); qwen2 and gpt2 refuse it.
  bool mlp_bias = false;
  // llama: the attention head width when it is not hidden_size / num_attention_heads (HF `head_dim`);
  // 0 = derived.
  int64_t explicit_head_dim = 0;
  // Rotary frequency rescaling (HF `rope_scaling`), llama and qwen2.
  RopeScaling rope_scaling = RopeScaling::none;
  double rope_scaling_factor = 1.0;
  double rope_scaling_low_freq_factor = 1.0;
  double rope_scaling_high_freq_factor = 4.0;
  int64_t rope_scaling_original_max_position_embeddings = 8192;

  int64_t head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden_size / num_attention_heads; }
  RopeFrequencies rope_frequencies() const;
  bool is_gpt2() const { return architecture == Architecture::gpt2; }
};

const char* architecture_name(Architecture a);

using ModelKey = config::Key<ModelConfig>;
// The rows of the model section (Hugging Face key names), in documentation order.
const std::vector<ModelKey>& model_keys();
// Builds and validates a config from the section's assignments (file lines, then overrides): architecture
// first, then the rest in order, then the defaults derived from the keys that were not given.
ModelConfig model_config_from_values(const std::vector<io::ConfigValue>& values, const std::string& where);

// Parses and validates a `model:` node; `where` names the file for error messages. Unknown keys, wrong
// types and inconsistent sizes are errors that name the key.
ModelConfig parse_model_config(const YAML::Node& node, const std::string& where);
void validate_model_config(const ModelConfig& config, const std::string& where);
// The section as YAML text (Hugging Face key names), for config.yaml in checkpoints.
std::string model_config_to_yaml(const ModelConfig& config);

}  // namespace gtpo::model
