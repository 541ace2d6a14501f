// Character-level tokenizer for synthetic tasks: one token per Unicode code point of an explicit alphabet
// (text must be valid UTF-8), plus <pad> = 0, <bos> = 1, <eos> = 2. Saved as a Hugging Face tokenizer.json
// with a WordLevel model, a pre-tokenizer that isolates every character and a Fuse decoder.
#pragma once
#include <memory>
#include <unordered_map>

#include "data/tokenizer/special_tokens.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_file.h"

namespace gtpo::data {

class CharTokenizer final : public Tokenizer {
 public:
  // Ids 0..2 are <pad>, <bos>, <eos>; the alphabet's characters follow in the order given. The alphabet must
  // be non-empty valid UTF-8 without repeated characters.
  explicit CharTokenizer(std::string_view alphabet);

  // From a parsed tokenizer.json with a WordLevel model whose non-added tokens are single characters.
  static std::unique_ptr<CharTokenizer> from_json(const Json& root, const std::string& path);
  // Whether a parsed tokenizer.json is in the layout to_json writes (no normalizer or post-processor, the
  // every-character Split, the Fuse decoder, single-character model tokens). Other WordLevel files are
  // Hugging Face's model, read by HfTokenizer.
  static bool has_char_layout(const nlohmann::json& root);
  Json to_json() const;

  // Unknown characters and invalid UTF-8 are a gtpo::Error naming the character and its byte offset.
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(text_.size()); }
  bool is_special(int32_t id) const override;
  std::string token_text(int32_t id) const override;
  std::string token_string(int32_t id) const override;
  int32_t token_id(std::string_view token) const override;
  // Added tokens in the text become their ids (gtpo's files have no post-processor).
  std::string kind() const override { return "char"; }
  void save(const std::string& path) const override;

 private:
  std::vector<int32_t> encode_added(std::string_view text) const override;
  CharTokenizer() = default;
  void check_id(int32_t id) const;

  std::vector<std::string> text_;     // id -> UTF-8 text (one character, or an added token's content)
  std::vector<uint8_t> added_;        // id -> 0 for characters, 1 for added tokens, 2 for special tokens
  std::unordered_map<char32_t, int32_t> ids_;  // character -> id
};

}  // namespace gtpo::data
