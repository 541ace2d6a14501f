// Added (special) tokens as Hugging Face files list them, and the rule that finds <bos>/<eos>/<pad> among
// them: tokenizer.json has no field for these roles, so they are recognised by content.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_file.h"

namespace gtpo::data {

struct AddedToken {
  int32_t id = -1;
  std::string content;  // raw text, not byte-level mapped
  bool special = true;
};

// One "added_tokens" entry in the shape Hugging Face writes.
Json added_token_json(int32_t id, const std::string& content, bool special);

// Reads the optional top-level "added_tokens" array (absent or null means none).
std::vector<AddedToken> parse_added_tokens(const Json& root, const std::string& path);

using SpecialRoles = TokenRoles;

// First special token whose content is in each role's list (see docs/tokenizers.md):
//   bos: <bos> <s> <|begin_of_text|> <|startoftext|> <|endoftext|>
//   eos: <eos> </s> <|endoftext|> <|end_of_text|>
//   pad: <pad> <|pad|> [PAD]
SpecialRoles find_special_roles(const std::vector<AddedToken>& tokens);

}  // namespace gtpo::data
