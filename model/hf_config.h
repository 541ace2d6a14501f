// Hugging Face model directories: config.json and generation_config.json, read and written with
// transformers' own key names for GPT2LMHeadModel, LlamaForCausalLM and Qwen2ForCausalLM.
// Which keys are honoured, ignored and refused: docs/checkpoint-format.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace gtpo::model {

struct HfModelConfig {
  ModelConfig config;
  int32_t bos_token_id = -1;           // -1: none given
  std::vector<int32_t> eos_token_ids;  // config.json's eos_token_id (one id or a list)
};

// Parses config.json's text; PATH names the file in errors. A key that would change the model in a way
// gtpo does not implement (another architecture, activation, rope type, an applying sliding window) is an
// error naming the file, the key and what is supported. Keys gtpo does not know are listed on stderr.
HfModelConfig parse_hf_config(const std::string& text, const std::string& path);

// eos_token_id (one id or a list) and bos_token_id of generation_config.json's text; PATH names the file.
struct GenerationIds {
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
};
GenerationIds parse_generation_config(const std::string& text, const std::string& path);

// config.json for CONFIG, as transformers 4.45 writes it for the architecture (torch_dtype names the
// weights' dtype: "float32", "bfloat16" or "float16"). bos / eos -1 or empty are written as null.
std::string hf_config_json(const ModelConfig& config, int32_t bos_token_id, const std::vector<int32_t>& eos_token_ids,
                           const std::string& torch_dtype = "float32");
std::string hf_generation_config_json(int32_t bos_token_id, const std::vector<int32_t>& eos_token_ids);

}  // namespace gtpo::model
