// What the transformers tokenizer class of a directory does to `tokenizer(text)`. AutoTokenizer picks the
// class from tokenizer_config.json's "tokenizer_class" or, without one, from config.json's "model_type". Most
// classes keep tokenizer.json's post-processor; the Llama, CodeLlama, Gemma, Cohere and GPT-NeoX fast classes
// (transformers 4.45) replace it with [bos if add_bos_token] $A [eos if add_eos_token], so that those two
// keys of tokenizer_config.json decide which special tokens `tokenizer(text)` adds (docs/tokenizers.md).
#pragma once
#include <optional>
#include <string>

#include "data/tokenizer/tokenizer_config.h"

namespace gtpo::data {

struct ClassSpecialTokens {
  std::string fast_class;  // the class transformers instantiates, e.g. "LlamaTokenizerFast"
  bool add_bos = false, add_eos = false;
};

// The special tokens CONFIG's class adds in place of tokenizer.json's post-processor (its add_bos_token /
// add_eos_token, else the class's defaults); nullopt for a class that keeps the post-processor.
std::optional<ClassSpecialTokens> class_special_tokens(const TokenizerConfig& config);

}  // namespace gtpo::data
