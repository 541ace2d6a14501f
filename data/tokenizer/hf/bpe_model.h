// The BPE model of a Hugging Face tokenizer.json ("model": {"type": "BPE"}), exactly as tokenizers 0.20
// applies it to one pre-tokenized word: one symbol per character (vocabulary lookup; byte_fallback to
// <0xXX> tokens; unk_token, fused when fuse_unk; otherwise the character is dropped, as in tokenizers), then
// merges lowest rank first, leftmost on ties. ignore_merges: a word that is itself in the vocabulary is one
// token. Vocabulary and merge ranks are hash maps, so a 150K vocabulary loads in well under a second.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer/hf/json_access.h"

namespace gtpo::data::hf {

class BpeModel {
 public:
  // `model` is the "model" object; errors name `at` (normally "model").
  BpeModel(const HfJson& model, const JsonPlace& at);

  // Appends the ids of one word (non-empty).
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  // Model tokens: id -> token string as written in the file (an empty string for ids the model lacks).
  const std::vector<std::string>& tokens() const { return tokens_; }
  // -1 when the model has no such token.
  int32_t id_of(std::string_view token) const;
  bool byte_fallback() const { return byte_fallback_; }

 private:
  void read_vocab(const HfJson& vocab, const JsonPlace& at);
  void read_merges(const HfJson& merges, const JsonPlace& at);
  std::vector<std::string> tokens_;
  // Transparent hashing: lookups by string_view allocate nothing.
  struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab_;
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;  // (left << 32 | right) -> (rank, new id)
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  std::string prefix_;  // continuing_subword_prefix
  std::string suffix_;  // end_of_word_suffix
  int32_t byte_tokens_[256];  // <0xXX> ids for byte_fallback, -1 when missing
};

}  // namespace gtpo::data::hf
