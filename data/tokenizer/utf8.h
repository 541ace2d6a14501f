// Small UTF-8 helpers: strict decoding, encoding and escaping for log output.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace gtpo::data {

// Decodes the code point starting at s[pos] and advances pos past it. Returns false (pos unchanged) on an
// invalid sequence: stray continuation byte, truncated sequence, overlong form, surrogate, > U+10FFFF.
bool utf8_next(std::string_view s, std::size_t& pos, char32_t& cp);

// True when the whole string is valid UTF-8.
bool utf8_valid(std::string_view s);

void utf8_append(std::string& out, char32_t cp);

// The bytes as valid UTF-8: each maximal invalid subpart (a stray byte, or the start of a sequence cut short)
// becomes one U+FFFD, as Python's bytes.decode("utf-8", "replace") and Rust's from_utf8_lossy give.
std::string utf8_replace_invalid(std::string_view bytes);

// Renders bytes for humans: valid printable UTF-8 is kept, \n \r \t \\ are escaped C-style, other control
// characters and invalid bytes become \xNN.
std::string escape_for_log(std::string_view bytes);

// "U+0041" style code point name.
std::string code_point_name(char32_t cp);

}  // namespace gtpo::data
