// A Hugging Face tokenizer.json with a BPE or WordLevel model, run as the `tokenizers` library (0.20) runs
// it:
//   added tokens split out of the text (non-normalized ones on the raw text, normalized ones after the
//   normalizer), normalizer, pre-tokenizer, model, post-processor (encode_hf with add_special_tokens),
//   decoder. Components: data/tokenizer/hf/. What is supported and refused: docs/tokenizers.md.
// save() writes the file back exactly as it was read.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/hf/decoder.h"
#include "data/tokenizer/hf/model.h"
#include "data/tokenizer/hf/normalizer.h"
#include "data/tokenizer/hf/post_processor.h"
#include "data/tokenizer/hf/pre_tokenizer.h"
#include "data/tokenizer/tokenizer.h"

namespace gtpo::data {

class HfTokenizer final : public Tokenizer {
 public:
  // `root` is the parsed `text` of the file at `path` (named in errors).
  static std::unique_ptr<HfTokenizer> from_json(const hf::HfJson& root, std::string text, const std::string& path);

  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  bool is_special(int32_t id) const override;
  std::string token_text(int32_t id) const override;
  std::string token_string(int32_t id) const override;
  int32_t token_id(std::string_view token) const override;
  std::string kind() const override { return kind_; }
  void save(const std::string& path) const override;

 private:
  std::vector<int32_t> encode_added(std::string_view text) const override;
  std::vector<int32_t> post_process(std::vector<int32_t> ids) const override;
  struct Added {
    int32_t id;
    std::string content;
    std::string match;  // what is searched for: content, normalized when `normalized`
    bool single_word, lstrip, rstrip, normalized, special;
  };
  HfTokenizer() = default;
  void check_id(int32_t id) const;
  void read_added_tokens(const hf::HfJson& added, const hf::JsonPlace& where);
  // Splits `text` on the added tokens of `set` (indices into added_), tokenizers' find_matches.
  void split_added(const std::string& text, bool at_start, const std::vector<int>& set,
                   std::vector<hf::Piece>& out) const;
  std::vector<int32_t> run_model(std::vector<hf::Piece> pieces) const;

  std::string original_;
  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<hf::Model> model_;
  std::unique_ptr<hf::PostProcessor> post_processor_;
  std::unique_ptr<hf::Decoder> decoder_;
  std::vector<Added> added_;
  std::vector<int> raw_set_, normalized_set_;  // added_ indices matched before / after normalization
  std::vector<std::string> tokens_;            // id -> token string (model token, or added token content)
  std::vector<int32_t> added_index_;           // id -> index into added_, -1 for model tokens
  std::string kind_ = "bpe";
};

}  // namespace gtpo::data
