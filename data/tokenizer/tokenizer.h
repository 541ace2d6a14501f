// The tokenizer interface shared by every tokenizer kind, and the loader that picks the kind from a file.
// Formats and behaviour are described in docs/tokenizers.md.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/tokenizer/tokenizer_class.h"
#include "data/tokenizer/tokenizer_config.h"

namespace gtpo::data {

// Ids of the special-token roles, -1 when the tokenizer has none.
struct TokenRoles {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t pad = -1;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids, text only: added and special tokens are never produced from text ("<|im_start|>" or
  // "<eos>" in the text are plain characters) and no post-processor adds BOS/EOS (callers add them by id).
  // This is what gtpo's RL code uses on task text, so task text cannot inject control tokens.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Hugging Face behaviour, transformers' `tokenizer(text, add_special_tokens=...)`: added tokens in the text
  // (special or not, with their lstrip/rstrip/single_word/normalized flags) become their ids, and with
  // add_special_tokens the post-processor adds its tokens (e.g. Llama 3's BOS), or, where the tokenizer class
  // of tokenizer_config.json decides them (tokenizer_class.h), BOS / EOS as its add_bos_token /
  // add_eos_token say. For trusted text such as a rendered chat template.
  std::vector<int32_t> encode_hf(std::string_view text, bool add_special_tokens) const;
  // Ids -> text. Special tokens render as their content ("<eos>"); an id outside [0, vocab_size) is a
  // gtpo::Error naming the id and the vocabulary size.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // decode() without the special tokens (Hugging Face's skip_special_tokens=True).
  std::string decode_skipping_special(std::span<const int32_t> ids) const;

  virtual int32_t vocab_size() const = 0;
  int32_t bos_id() const { return roles_.bos; }  // -1 when the vocabulary has none
  int32_t eos_id() const { return roles_.eos; }
  int32_t pad_id() const { return roles_.pad; }
  // True for special (control) tokens, which have no byte content of their own: <pad>, <bos>, <eos>, ...
  virtual bool is_special(int32_t id) const = 0;
  // A printable rendering of one token for logs: control and invalid bytes escaped ("\n", "\xff").
  virtual std::string token_text(int32_t id) const = 0;
  // The token as tokenizer.json spells it (byte-level form for byte-level BPE, the content for added tokens).
  virtual std::string token_string(int32_t id) const = 0;
  // Inverse of token_string (added tokens first, as Hugging Face looks them up); -1 when absent.
  virtual int32_t token_id(std::string_view token) const = 0;
  // "char", "bpe" or "byte".
  virtual std::string kind() const = 0;
  // Writes a Hugging Face tokenizer.json atomically (path.tmp, fsync, rename). A loaded Hugging Face file is
  // written back as it was read (normalizer, pre-tokenizer, post-processor, decoder, added tokens kept).
  virtual void save(const std::string& path) const = 0;

  // The chat template of tokenizer_config.json, "" when none.
  const std::string& chat_template() const { return config_.chat_template; }
  // The tokenizer_config.json read with the tokenizer (all fields empty when there was none).
  const TokenizerConfig& config() const { return config_; }
  // Takes the roles named by a tokenizer_config.json (LABEL names it in errors: a role naming a token the
  // vocabulary lacks, or a class that adds a BOS / EOS the tokenizer lacks, is a gtpo::Error) and keeps the
  // config for chat_template(), encode_hf and saving.
  void apply_config(const TokenizerConfig& config, const std::string& label);

 protected:
  // encode_hf without any special tokens added around the text (add_special_tokens=False).
  virtual std::vector<int32_t> encode_added(std::string_view text) const = 0;
  // tokenizer.json's post-processor on IDS (add_special_tokens=True); none: IDS unchanged.
  virtual std::vector<int32_t> post_process(std::vector<int32_t> ids) const { return ids; }

  TokenRoles roles_;

 private:
  TokenizerConfig config_;
  std::optional<ClassSpecialTokens> class_tokens_;  // the class's BOS / EOS instead of post_process
};

// Reads a tokenizer file written by save() or a Hugging Face tokenizer.json; the kind is detected from the
// file. A directory means DIR/tokenizer.json. A tokenizer_config.json beside the file is applied when
// present. Malformed files, and components gtpo does not implement, are a gtpo::Error naming the file and
// the component.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);
// Same, over the file's text already in memory; LABEL names it in error messages (the fuzz harness uses it).
std::unique_ptr<Tokenizer> parse_tokenizer(const std::string& text, const std::string& label);

// The default tokenizer: ids 0..255 are the bytes, 256 <pad>, 257 <bos>, 258 <eos>, and ids 259..
// vocab_size-1 are unused special tokens "<unused_0>", "<unused_1>", ... (valid for decode, never produced
// by encode). vocab_size must be at least 259.
std::unique_ptr<Tokenizer> make_byte_tokenizer(int32_t vocab_size);

// Hugging Face's added-token split for tokenizers whose added tokens have no flags (gtpo's own files):
// leftmost-longest matches of `added` (id, content) in text become their ids, the text between is encoded
// with `encode_text`.
std::vector<int32_t> encode_with_plain_added_tokens(
    std::string_view text, const std::vector<std::pair<int32_t, std::string>>& added,
    const std::function<void(std::string_view, std::vector<int32_t>&)>& encode_text);

}  // namespace gtpo::data
