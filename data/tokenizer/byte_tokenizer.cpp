// The byte tokenizer: a merge-free byte-level BPE, the default when a model config has no tokenizer.
#include <memory>

#include "data/tokenizer/bpe_tokenizer.h"
#include "runtime/error.h"

namespace gtpo::data {

BpeTokenizer BpeTokenizer::byte_level(int32_t vocab_size) {
  GTPO_CHECK(vocab_size >= 259, "byte tokenizer: vocab_size ", vocab_size,
             " is below 259 (256 bytes + <pad>, <bos>, <eos>)");
  std::vector<std::string> bytes;
  std::vector<TokenOrigin> origin;
  bytes.reserve(vocab_size);
  for (int b = 0; b < 256; ++b) {
    bytes.emplace_back(1, static_cast<char>(b));
    origin.push_back(TokenOrigin::kModel);
  }
  for (const char* name : {"<pad>", "<bos>", "<eos>"}) {
    bytes.emplace_back(name);
    origin.push_back(TokenOrigin::kSpecial);
  }
  // Extra ids exist so the vocabulary matches the model's vocab_size; they decode to their names.
  for (int32_t id = 259; id < vocab_size; ++id) {
    bytes.push_back("<unused_" + std::to_string(id - 259) + ">");
    origin.push_back(TokenOrigin::kSpecial);
  }
  return BpeTokenizer(std::move(bytes), std::move(origin), {}, false, "byte tokenizer: ");
}

std::unique_ptr<Tokenizer> make_byte_tokenizer(int32_t vocab_size) {
  return std::make_unique<BpeTokenizer>(BpeTokenizer::byte_level(vocab_size));
}

}  // namespace gtpo::data
