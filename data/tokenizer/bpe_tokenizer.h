// Byte-level BPE as in GPT-2: text is split by the pre-tokenizer (pretokenizer.h), each chunk starts as one
// token per byte and merges apply lowest rank first (leftmost on ties), exactly as Hugging Face's BPE model
// does. Every byte has a token, so decode(encode(x)) == x for any bytes. Saved as a Hugging Face
// tokenizer.json (model "BPE", ByteLevel pre-tokenizer and decoder); load_tokenizer reads such files back as
// an HfTokenizer (hf_tokenizer.h). Also backs the in-memory "byte" tokenizer.
#pragma once
#include <array>
#include <memory>
#include <unordered_map>
#include <utility>

#include "data/tokenizer/special_tokens.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_file.h"
#include "data/tokenizer/vocab_table.h"

namespace gtpo::data {

class BpeTokenizer final : public Tokenizer {
 public:
  // Learns merges on `corpus` until the vocabulary holds vocab_size tokens or no pair occurs twice.
  // Layout: special tokens first (ids 0..k-1, in the order given), then the 256 bytes in byte order, then one
  // token per merge. Each step merges the most frequent adjacent pair (counted over pre-tokenized chunks);
  // ties go to the smallest (left id, right id). Deterministic: same inputs, same merges.
  static BpeTokenizer train(std::string_view corpus, int32_t vocab_size, std::vector<std::string> special_tokens);

  // Ids 0..255 are the bytes, then <pad>, <bos>, <eos>, then <unused_0>, <unused_1>, ... up to vocab_size.
  static BpeTokenizer byte_level(int32_t vocab_size);

  Json to_json() const;

  // Merges in rank order, as (left id, right id).
  const std::vector<std::pair<int32_t, int32_t>>& merges() const { return merges_; }

  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return static_cast<int32_t>(bytes_.size()); }
  bool is_special(int32_t id) const override;
  std::string token_text(int32_t id) const override;
  std::string token_string(int32_t id) const override;
  int32_t token_id(std::string_view token) const override;
  // Added tokens in the text become their ids (gtpo's files have no post-processor).
  std::string kind() const override { return kind_; }
  void save(const std::string& path) const override;

 private:
  std::vector<int32_t> encode_added(std::string_view text) const override;
  // `bytes` holds each model token's raw bytes and each added token's content. `context` prefixes errors.
  BpeTokenizer(std::vector<std::string> bytes, std::vector<TokenOrigin> origin,
               std::vector<std::pair<int32_t, int32_t>> merges, bool ignore_merges, const std::string& context);
  void encode_chunk(std::string_view chunk, std::vector<int32_t>& out) const;
  void check_id(int32_t id) const;

  std::vector<std::string> bytes_;
  std::vector<TokenOrigin> origin_;
  std::vector<std::pair<int32_t, int32_t>> merges_;
  // (left << 32 | right) -> (rank, merged id)
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merge_of_;
  std::array<int32_t, 256> byte_id_{};
  std::unordered_map<std::string, int32_t> model_id_;  // raw bytes -> id of model (non-added) tokens
  bool ignore_merges_ = false;  // HF option: a chunk that is itself a token is emitted whole
  std::string kind_ = "bpe";
};

}  // namespace gtpo::data
