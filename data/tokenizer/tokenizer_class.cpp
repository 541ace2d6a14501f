#include "data/tokenizer/tokenizer_class.h"

#include <array>
#include <string_view>

namespace gtpo::data {
namespace {

// The fast classes whose __init__ calls update_post_processor(), with their add_bos_token / add_eos_token
// defaults (transformers 4.45).
struct RebuildingClass {
  std::string_view fast_class;
  bool bos_default, eos_default;
};
constexpr std::array<RebuildingClass, 5> kRebuilding = {{
    {"LlamaTokenizerFast", true, false},
    {"CodeLlamaTokenizerFast", true, false},
    {"GemmaTokenizerFast", true, false},
    {"CohereTokenizerFast", true, false},
    {"GPTNeoXTokenizerFast", false, false},
}};

// config.json model types that AutoTokenizer maps to one of those classes when tokenizer_config.json names
// none (transformers 4.45 TOKENIZER_MAPPING_NAMES).
struct ModelTypeClass {
  std::string_view model_type, fast_class;
};
constexpr std::array<ModelTypeClass, 32> kByModelType = {{
    {"chameleon", "LlamaTokenizerFast"},   {"code_llama", "CodeLlamaTokenizerFast"},
    {"cohere", "CohereTokenizerFast"},     {"falcon_mamba", "GPTNeoXTokenizerFast"},
    {"gemma", "GemmaTokenizerFast"},       {"gemma2", "GemmaTokenizerFast"},
    {"gpt_neox", "GPTNeoXTokenizerFast"},  {"idefics", "LlamaTokenizerFast"},
    {"idefics2", "LlamaTokenizerFast"},    {"jamba", "LlamaTokenizerFast"},
    {"jetmoe", "LlamaTokenizerFast"},      {"llama", "LlamaTokenizerFast"},
    {"llava", "LlamaTokenizerFast"},       {"llava-onevision", "LlamaTokenizerFast"},
    {"llava_next", "LlamaTokenizerFast"},  {"llava_next_video", "LlamaTokenizerFast"},
    {"mamba", "GPTNeoXTokenizerFast"},     {"mamba2", "GPTNeoXTokenizerFast"},
    {"mistral", "LlamaTokenizerFast"},     {"mixtral", "LlamaTokenizerFast"},
    {"mllama", "LlamaTokenizerFast"},      {"mpt", "GPTNeoXTokenizerFast"},
    {"olmo", "GPTNeoXTokenizerFast"},      {"olmoe", "GPTNeoXTokenizerFast"},
    {"paligemma", "LlamaTokenizerFast"},   {"persimmon", "LlamaTokenizerFast"},
    {"phi3", "LlamaTokenizerFast"},        {"recurrent_gemma", "GemmaTokenizerFast"},
    {"rwkv", "GPTNeoXTokenizerFast"},      {"stablelm", "GPTNeoXTokenizerFast"},
    {"video_llava", "LlamaTokenizerFast"}, {"vipllava", "LlamaTokenizerFast"},
}};

// The fast class AutoTokenizer instantiates for CONFIG ("" when it is none of kRebuilding's): a slow name
// ("LlamaTokenizer") means its fast sibling, as with use_fast=True.
std::string_view fast_class_of(const TokenizerConfig& config) {
  if (config.tokenizer_class.empty()) {
    for (const ModelTypeClass& m : kByModelType)
      if (m.model_type == config.model_type) return m.fast_class;
    return {};
  }
  const std::string_view name = config.tokenizer_class;
  for (const RebuildingClass& c : kRebuilding) {
    const std::string_view slow = c.fast_class.substr(0, c.fast_class.size() - 4);  // without "Fast"
    if (name == c.fast_class || name == slow) return c.fast_class;
  }
  return {};
}

}  // namespace

std::optional<ClassSpecialTokens> class_special_tokens(const TokenizerConfig& config) {
  const std::string_view fast = fast_class_of(config);
  for (const RebuildingClass& c : kRebuilding) {
    if (c.fast_class != fast) continue;
    return ClassSpecialTokens{std::string(fast), config.add_bos_token.value_or(c.bos_default),
                              config.add_eos_token.value_or(c.eos_default)};
  }
  return std::nullopt;
}

}  // namespace gtpo::data
