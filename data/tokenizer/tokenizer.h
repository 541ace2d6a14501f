// The tokenizer interface shared by every tokenizer kind, and the loader that picks the kind from a file.
// Formats and behaviour are described in docs/tokenizers.md.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gtpo::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids. Special tokens are never produced from text: "<eos>" in the text is plain characters
  // (callers add bos/eos by id), so user text cannot inject control tokens.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Ids -> text. Special tokens render as their content ("<eos>"); an id outside [0, vocab_size) is a
  // gtpo::Error naming the id and the vocabulary size.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the vocabulary has none
  virtual int32_t eos_id() const = 0;
  virtual int32_t pad_id() const = 0;
  // True for special (control) tokens, which have no byte content of their own: <pad>, <bos>, <eos>, ...
  virtual bool is_special(int32_t id) const = 0;
  // A printable rendering of one token for logs: control and invalid bytes escaped ("\n", "\xff").
  virtual std::string token_text(int32_t id) const = 0;
  // "char", "bpe" or "byte".
  virtual std::string kind() const = 0;
  // Writes a Hugging Face tokenizer.json atomically (path.tmp, fsync, rename).
  virtual void save(const std::string& path) const = 0;
};

// Reads a tokenizer file written by save() or a Hugging Face byte-level BPE tokenizer.json; the kind is
// detected from the file. A directory means DIR/tokenizer.json. Malformed files are a gtpo::Error naming
// the file and the problem.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);
// Same, over the file's text already in memory; LABEL names it in error messages (the fuzz harness uses it).
std::unique_ptr<Tokenizer> parse_tokenizer(const std::string& text, const std::string& label);

// The default tokenizer: ids 0..255 are the bytes, 256 <pad>, 257 <bos>, 258 <eos>, and ids 259..
// vocab_size-1 are unused special tokens "<unused_0>", "<unused_1>", ... (valid for decode, never produced
// by encode). vocab_size must be at least 259.
std::unique_ptr<Tokenizer> make_byte_tokenizer(int32_t vocab_size);

}  // namespace gtpo::data
