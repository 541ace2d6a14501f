// Assembles the id -> token table of a Hugging Face tokenizer.json from "model.vocab" and "added_tokens",
// checking that ids are unique and contiguous from 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/special_tokens.h"
#include "data/tokenizer/tokenizer_file.h"

namespace gtpo::data {

enum class TokenOrigin : uint8_t { kModel, kAdded, kSpecial };

struct VocabTable {
  std::vector<std::string> text;     // id -> token string as written in the file (byte-level form for BPE)
  std::vector<TokenOrigin> origin;   // id -> where the token came from
};

// `vocab` is the "model.vocab" object. Errors name the file and the offending id or token.
VocabTable build_vocab_table(const Json& vocab, const std::vector<AddedToken>& added, const std::string& path);

}  // namespace gtpo::data
