// The model of a Hugging Face tokenizer.json: what turns one pre-tokenized word into ids. The vocabulary
// (token -> id, read and checked the same way for every model type) lives here; BPE (bpe_model.h) and
// WordLevel derive. Unigram and WordPiece are refused by name (docs/tokenizers.md).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer/hf/json_access.h"

namespace gtpo::data::hf {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one word (non-empty).
  virtual void tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
  // Model tokens: id -> token string as written in the file (an empty string for ids the model lacks).
  const std::vector<std::string>& tokens() const { return tokens_; }
  // -1 when the model has no such token.
  int32_t id_of(std::string_view token) const;

 protected:
  // 'vocab': token -> id, ids unique and below 2^24 (a corrupt id never allocates gigabytes).
  void read_vocab(const HfJson& vocab, const JsonPlace& at);
  std::vector<std::string> tokens_;

 private:
  // Transparent hashing: lookups by string_view allocate nothing.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
};

// The "model" object of a file (errors name `at`): BPE or WordLevel.
std::unique_ptr<Model> parse_model(const HfJson& model, const JsonPlace& at);

}  // namespace gtpo::data::hf
