// The byte tokenizer, the default when a model config has no tokenizer: one token per byte. Saved as a
// merge-free byte-level BPE tokenizer.json, which load_tokenizer reads back as an HfTokenizer of kind "byte"
// with the same ids (docs/tokenizers.md).
#include <memory>

#include "data/tokenizer/byte_level.h"
#include "data/tokenizer/special_tokens.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/tokenizer_file.h"
#include "data/tokenizer/utf8.h"
#include "runtime/error.h"

namespace gtpo::data {
namespace {

constexpr int32_t kBytes = 256;

// Ids 0..255 are the bytes (id = byte value), then <pad>, <bos>, <eos>, then <unused_0>, <unused_1>, ...
// up to vocab_size so that the vocabulary matches the model's: encode never produces those, decode renders
// them as their names.
class ByteTokenizer final : public Tokenizer {
 public:
  explicit ByteTokenizer(int32_t vocab_size) {
    GTPO_CHECK(vocab_size >= kBytes + 3, "byte tokenizer: vocab_size ", vocab_size,
               " is below 259 (256 bytes + <pad>, <bos>, <eos>)");
    std::vector<AddedToken> added;
    for (int32_t id = kBytes; id < vocab_size; ++id) {
      const int32_t n = id - kBytes;
      names_.push_back(n == 0   ? "<pad>"
                       : n == 1 ? "<bos>"
                       : n == 2 ? "<eos>"
                                : "<unused_" + std::to_string(n - 3) + ">");
      added.push_back(AddedToken{id, names_.back(), true});
    }
    roles_ = find_special_roles(added);
  }

  std::vector<int32_t> encode(std::string_view text) const override {
    std::vector<int32_t> ids(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<uint8_t>(text[i]);
    return ids;
  }
  std::string decode(std::span<const int32_t> ids) const override {
    std::string out;
    for (int32_t id : ids) {
      check_id(id);
      if (id < kBytes) {
        out += static_cast<char>(id);
      } else {
        out += names_[static_cast<std::size_t>(id - kBytes)];
      }
    }
    return out;
  }
  int32_t vocab_size() const override { return kBytes + static_cast<int32_t>(names_.size()); }
  bool is_special(int32_t id) const override {
    check_id(id);
    return id >= kBytes;
  }
  std::string token_text(int32_t id) const override {
    check_id(id);
    return id < kBytes ? escape_for_log(std::string(1, static_cast<char>(id)))
                       : names_[static_cast<std::size_t>(id - kBytes)];
  }
  std::string token_string(int32_t id) const override {
    check_id(id);
    return id < kBytes ? bytes_to_byte_level(std::string(1, static_cast<char>(id)))
                       : names_[static_cast<std::size_t>(id - kBytes)];
  }
  int32_t token_id(std::string_view token) const override {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == token) return kBytes + static_cast<int32_t>(i);
    std::string bytes;
    if (!byte_level_to_bytes(token, bytes) || bytes.size() != 1) return -1;
    return static_cast<uint8_t>(bytes[0]);
  }
  std::string kind() const override { return "byte"; }
  void save(const std::string& path) const override { write_file_atomic(path, to_json().dump(2) + "\n"); }

 private:
  // Added tokens in the text become their ids (gtpo's files have no post-processor).
  std::vector<int32_t> encode_added(std::string_view text) const override {
    std::vector<std::pair<int32_t, std::string>> added;
    for (std::size_t i = 0; i < names_.size(); ++i)
      added.emplace_back(kBytes + static_cast<int32_t>(i), names_[i]);
    return encode_with_plain_added_tokens(text, added, [&](std::string_view part, std::vector<int32_t>& out) {
      for (char c : part) out.push_back(static_cast<uint8_t>(c));
    });
  }

  void check_id(int32_t id) const {
    GTPO_CHECK(id >= 0 && id < vocab_size(), "byte tokenizer: token id ", id,
               " is out of range for vocabulary size ", vocab_size());
  }

  // A Hugging Face BPE tokenizer.json without merges: ByteLevel pre-tokenizer and decoder. The added tokens
  // are in the model vocabulary too (as HF's trainer writes them): HF takes an added token's id from it and
  // would otherwise renumber the token after the last model token.
  Json to_json() const {
    Json added = Json::array();
    Json vocab = Json::object();
    for (int32_t id = 0; id < vocab_size(); ++id) vocab[token_string(id)] = id;
    for (std::size_t i = 0; i < names_.size(); ++i)
      added.push_back(added_token_json(kBytes + static_cast<int32_t>(i), names_[i], true));
    Json model = Json::object();
    model["type"] = "BPE";
    model["dropout"] = nullptr;
    model["unk_token"] = nullptr;
    model["continuing_subword_prefix"] = nullptr;
    model["end_of_word_suffix"] = nullptr;
    model["fuse_unk"] = false;
    model["byte_fallback"] = false;
    model["vocab"] = std::move(vocab);
    model["merges"] = Json::array();
    return own_tokenizer_json(
        std::move(added),
        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}},
        {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}},
        std::move(model));
  }

  std::vector<std::string> names_;  // ids 256..: the special tokens
};

}  // namespace

std::unique_ptr<Tokenizer> make_byte_tokenizer(int32_t vocab_size) {
  return std::make_unique<ByteTokenizer>(vocab_size);
}

}  // namespace gtpo::data
