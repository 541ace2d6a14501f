// GPT-2's reversible byte <-> printable-unicode mapping ("bytes_to_unicode"), used for token strings in
// Hugging Face byte-level BPE files: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order (so space is "Ġ", newline "Ċ").
#pragma once
#include <string>
#include <string_view>

namespace gtpo::data {

// Byte string -> byte-level token string (always valid UTF-8).
std::string bytes_to_byte_level(std::string_view bytes);

// Byte-level token string -> bytes. Returns false when the string is not valid UTF-8 or holds a code point
// outside the 256 of the mapping.
bool byte_level_to_bytes(std::string_view text, std::string& bytes);

}  // namespace gtpo::data
