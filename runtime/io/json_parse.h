// Every JSON text gtpo reads from outside (files, JSONL lines, command-line values, reward replies) is parsed
// by parse_json: a raw NUL byte is a syntax error at its offset, and a text nesting arrays and objects deeper
// than kMaxJsonDepth is refused by a linear scan before parsing, as nlohmann's parse_error (so each caller's
// message names its file and line as for any syntax error). Parsing itself would cope, but the readers after
// it recurse (nlohmann's dump, the tokenizer's component parsers) and would run out of stack. HF tokenizers'
// serde_json stops at 128.
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "runtime/error.h"

namespace gtpo::io {

inline constexpr int kMaxJsonDepth = 512;

// The byte offset at which TEXT opens its (kMaxJsonDepth + 1)-th nested array or object, or npos. Brackets
// inside strings do not count; the text need not be valid JSON. Header-only: data/ reads JSON too and links
// no runtime library.
inline std::size_t json_too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// nlohmann's lexer takes a NUL byte for the end of the input, so "{}\0garbage" would parse as "{}"; JSON
// holds no raw NUL anywhere (inside strings it is written \u0000), so the first one is a syntax error there.
template <class Json = nlohmann::json>
Json parse_json(std::string_view text) {
  if (const std::size_t at = text.find('\0'); at != std::string_view::npos)
    throw Json::parse_error::create(101, at + 1, "a NUL byte (JSON text holds none: data after the end?)",
                                    nullptr);
  if (const std::size_t at = json_too_deep_at(text); at != std::string_view::npos)
    throw Json::parse_error::create(
        101, at + 1,
        "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (gtpo's limit)",
        nullptr);
  return Json::parse(text);
}

// parse_json with a syntax error as a gtpo::Error: PREFIX (the file or line and what failed), then nlohmann's
// message.
template <class Json = nlohmann::json>
Json parse_json_or_fail(std::string_view text, const std::string& prefix) {
  try {
    return parse_json<Json>(text);
  } catch (const nlohmann::json::exception& e) {
    fail(prefix, e.what());
  }
}

}  // namespace gtpo::io
