// The byte-level pre-tokenizer: splits text into the chunks BPE merges within, following GPT-2's pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// without a regex library. Character classes work on bytes: letters are A-Z, a-z and every byte >= 0x80
// (so multi-byte UTF-8 characters always count as letters), digits are 0-9, whitespace is space, \t, \n,
// \v, \f, \r; everything else is "other". On ASCII text (and text whose non-ASCII characters are letters)
// the split equals GPT-2's / Hugging Face's; see docs/tokenizers.md.
#pragma once
#include <string_view>
#include <vector>

namespace gtpo::data {

// The chunks concatenate back to exactly `text`; none is empty.
std::vector<std::string_view> pretokenize(std::string_view text);

}  // namespace gtpo::data
