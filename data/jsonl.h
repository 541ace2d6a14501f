// JSON Lines input: one JSON object per line, each remembered with its file and line number so
// every later complaint about a record can name where it came from ("FILE:LINE: problem").
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/error.h"

namespace gtpo::data {

struct JsonLine {
  std::string source;   // file name as given (or any label for in-memory text)
  std::size_t line = 0; // 1-based line number in the source
  nlohmann::json value;  // always an object (its keys sorted: nlohmann::json is a std::map)
  std::string text;      // the line as read, for ordered_field
};

// Field KEY of the line with every object's keys in the file's order (nlohmann::json sorts them): for
// what a template renders as written, such as a conversation's tool-call arguments. Null when absent.
nlohmann::ordered_json ordered_field(const JsonLine& where, const std::string& key);

// Reads and parses every non-blank line of PATH. Throws gtpo::Error "PATH:LINE: ..." for invalid
// JSON or a value that is not an object, and "PATH: cannot open" when the file cannot be read.
std::vector<JsonLine> read_jsonl(const std::string& path);

// Same, over text already in memory; SOURCE names it in error messages.
std::vector<JsonLine> parse_jsonl(std::string_view text, const std::string& source);

// nlohmann's message without its "[json.exception.parse_error.101] " id: what a user can act on
// ("parse error at line 1, column 3: ...", "number overflow parsing '1e999'").
std::string json_error_message(const nlohmann::json::exception& e);

// Throws gtpo::Error "SOURCE:LINE: " followed by the streamed parts.
template <typename... Parts>
[[noreturn]] void fail_at(const JsonLine& where, const Parts&... parts) {
  fail(where.source, ":", where.line, ": ", parts...);
}

// Required fields with type checks; a missing or wrong-typed field fails with
// "SOURCE:LINE: field 'KEY' must be a string (got number)" or "... missing field 'KEY'".
const nlohmann::json& require_field(const JsonLine& where, const std::string& key);
std::string require_string(const JsonLine& where, const std::string& key);
int64_t require_int(const JsonLine& where, const std::string& key);
bool require_bool(const JsonLine& where, const std::string& key);
const nlohmann::json& require_array(const JsonLine& where, const std::string& key);

// Optional field: nullopt when absent or null; wrong type is still an error.
std::optional<std::string> optional_string(const JsonLine& where, const std::string& key);

// Human name of a JSON value's type, for messages ("string", "number", "object", ...).
std::string json_type_name(const nlohmann::json& value);

}  // namespace gtpo::data
