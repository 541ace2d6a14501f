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

#include "data/tokenizer/hf/model.h"

namespace gtpo::data::hf {

class BpeModel final : public Model {
 public:
  // `model` is the "model" object; errors name `at` (normally "model").
  BpeModel(const HfJson& model, const JsonPlace& at);

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override;

 private:
  void read_merges(const HfJson& merges, const JsonPlace& at);
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
