#include "data/jsonl.h"

#include <fstream>
#include <sstream>

#include "runtime/io/input_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::data {

namespace {

bool is_blank(std::string_view s) {
  for (char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n') return false;
  }
  return true;
}

}  // namespace

std::string json_error_message(const nlohmann::json::exception& e) {
  const std::string what = e.what();
  const auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

nlohmann::ordered_json ordered_field(const JsonLine& where, const std::string& key) {
  if (where.text.empty())
    return where.value.contains(key) ? nlohmann::ordered_json(where.value[key]) : nullptr;  // built in memory
  const nlohmann::ordered_json all = nlohmann::ordered_json::parse(where.text);  // parsed once already: valid
  const auto it = all.find(key);
  return it == all.end() ? nlohmann::ordered_json() : *it;
}

std::vector<JsonLine> parse_jsonl(std::string_view text, const std::string& source) {
  std::vector<JsonLine> out;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = text.find('\n', pos);
    const std::string_view line =
        text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    ++line_no;
    if (line.size() > io::kMaxLineBytes)
      fail(source, ":", line_no, ": a line of ", io::byte_size_text(line.size()), ", over the limit of ",
           io::byte_size_text(io::kMaxLineBytes), " per JSONL line");
    if (!is_blank(line)) {
      JsonLine record{source, line_no, {}, std::string(line)};
      try {
        record.value = io::parse_json(line);
      } catch (const nlohmann::json::exception& e) {
        // Not only syntax: a number beyond double's range (1e999) is out_of_range.406.
        fail_at(record, "invalid JSON: ", json_error_message(e));
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
  io::check_input_file(path, io::kMaxInputBytes, "JSONL");
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
  // nlohmann keeps 2^63 .. 2^64-1 as unsigned; get<int64_t> would wrap them to negatives.
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    fail_at(where, "field '", key, "' is ", v.get<uint64_t>(), ", beyond the largest integer ", INT64_MAX);
  return v.get<int64_t>();
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
