#include "data/jsonl.h"

#include <fstream>
#include <sstream>

namespace gtpo::data {

namespace {

bool is_blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

// nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 1, ...";
// keep only the part after the bracketed id, which is what a user can act on.
std::string short_parse_message(const std::string& what) {
  const auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

}  // namespace

std::vector<JsonLine> parse_jsonl(std::string_view text, const std::string& source) {
  std::vector<JsonLine> out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    ++line_no;
    if (!is_blank(line)) {
      JsonLine record{source, line_no, {}};
      try {
        record.value = nlohmann::json::parse(line);
      } catch (const nlohmann::json::parse_error& e) {
        fail_at(record, "invalid JSON: ", short_parse_message(e.what()));
      }
      if (!record.value.is_object()) {
        fail_at(record, "expected a JSON object, got ", json_type_name(record.value));
      }
      out.push_back(std::move(record));
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return out;
}

std::vector<JsonLine> read_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  GTPO_CHECK(in.good(), path, ": cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_jsonl(buffer.str(), path);
}

std::string json_type_name(const nlohmann::json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number()) return "number";
  return value.type_name();
}

const nlohmann::json& require_field(const JsonLine& where, const std::string& key) {
  const auto it = where.value.find(key);
  if (it == where.value.end()) fail_at(where, "missing field '", key, "'");
  return *it;
}

namespace {
[[noreturn]] void wrong_type(const JsonLine& where, const std::string& key, const char* wanted,
                             const nlohmann::json& got) {
  fail_at(where, "field '", key, "' must be ", wanted, " (got ", json_type_name(got), ")");
}
}  // namespace

std::string require_string(const JsonLine& where, const std::string& key) {
  const auto& v = require_field(where, key);
  if (!v.is_string()) wrong_type(where, key, "a string", v);
  return v.get<std::string>();
}

int64_t require_int(const JsonLine& where, const std::string& key) {
  const auto& v = require_field(where, key);
  if (!v.is_number_integer()) wrong_type(where, key, "an integer", v);
  return v.get<int64_t>();
}

double require_number(const JsonLine& where, const std::string& key) {
  const auto& v = require_field(where, key);
  if (!v.is_number()) wrong_type(where, key, "a number", v);
  return v.get<double>();
}

bool require_bool(const JsonLine& where, const std::string& key) {
  const auto& v = require_field(where, key);
  if (!v.is_boolean()) wrong_type(where, key, "a boolean", v);
  return v.get<bool>();
}

const nlohmann::json& require_array(const JsonLine& where, const std::string& key) {
  const auto& v = require_field(where, key);
  if (!v.is_array()) wrong_type(where, key, "an array", v);
  return v;
}

std::optional<std::string> optional_string(const JsonLine& where, const std::string& key) {
  const auto it = where.value.find(key);
  if (it == where.value.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) wrong_type(where, key, "a string", *it);
  return it->get<std::string>();
}

}  // namespace gtpo::data
