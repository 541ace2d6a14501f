// Hugging Face decoders (tokenizer.json "decoder"): ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace and Sequence. A decoder turns token strings back into text; without one tokenizers joins the
// tokens with spaces. One deliberate difference: where tokenizers writes U+FFFD for bytes that do not form
// valid UTF-8, gtpo keeps the bytes, so decode(encode(x)) == x holds for any byte string x.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/hf/json_access.h"

namespace gtpo::data::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // tokenizers' decode_chain: tokens in, tokens out (the caller concatenates the result).
  virtual std::vector<std::string> decode_chain(std::vector<std::string> tokens) const = 0;
};

// `json` null means none (returns nullptr).
std::unique_ptr<Decoder> parse_decoder(const HfJson& json, const JsonPlace& at);

}  // namespace gtpo::data::hf
