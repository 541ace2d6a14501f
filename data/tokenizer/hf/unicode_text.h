// Unicode services for the Hugging Face tokenizer pipeline, backed by utf8proc (normalization forms and
// character categories are not written by hand here). Strings are UTF-8; invalid bytes are kept as they are
// (see for_each_valid_run), since gtpo accepts arbitrary bytes where Hugging Face only sees valid strings.
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace gtpo::data::hf {

enum class NormalForm { kNFC, kNFD, kNFKC, kNFKD };

// Applies the normal form to every valid UTF-8 run of `text`; invalid bytes pass through untouched.
std::string normalize_unicode(std::string_view text, NormalForm form);

// Unicode lower case per code point (utf8proc's simple case mapping), invalid bytes untouched.
std::string lowercase_unicode(std::string_view text);

// Rust's char::is_whitespace (the White_Space property).
bool is_white_space(char32_t cp);
// Rust's char::is_numeric: general categories Nd, Nl, No.
bool is_numeric(char32_t cp);
// The value 0-9 of a decimal digit (general category Nd, which Python's int() and float() read), else -1.
int decimal_digit(char32_t cp);
// Rust regex's \w: letters, marks, decimal digits, connector punctuation (Pc), plus Nl.
bool is_word_char(char32_t cp);

// Calls fn(offset, length, valid) for consecutive runs of `text`: maximal valid UTF-8 runs (valid = true)
// and single bytes that start no valid sequence (valid = false).
void for_each_valid_run(std::string_view text, const std::function<void(std::size_t, std::size_t, bool)>& fn);

}  // namespace gtpo::data::hf
