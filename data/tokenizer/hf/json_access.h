// Checked access to the components of a parsed tokenizer.json (nlohmann::json, unordered: a 150K-entry
// vocabulary parses in a fraction of a second). Errors read
//   tokenizer file 'PATH': pre_tokenizer.pretokenizers[1]: unsupported type 'X' (supported: ...)
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/error.h"

namespace gtpo::data::hf {

using HfJson = nlohmann::json;

// Where a component sits: the file and its dotted location inside it.
struct JsonPlace {
  std::string path;
  std::string where;

  JsonPlace child(const std::string& key) const { return {path, where.empty() ? key : where + "." + key}; }
  JsonPlace index(std::size_t i) const { return {path, where + "[" + std::to_string(i) + "]"}; }
  std::string prefix() const { return "tokenizer file '" + path + "': " + (where.empty() ? "" : where + ": "); }
};

template <typename... Args>
[[noreturn]] void json_fail(const JsonPlace& at, const Args&... args) {
  fail(at.prefix(), args...);
}

// The component's "type" string (missing or not a string is an error).
std::string component_type(const HfJson& obj, const JsonPlace& at);
// obj[key] when present and not null, else nullptr.
const HfJson* optional_field(const HfJson& obj, const std::string& key);
bool optional_bool(const HfJson& obj, const std::string& key, bool fallback, const JsonPlace& at);
std::string required_string(const HfJson& obj, const std::string& key, const JsonPlace& at);
const HfJson& required_field(const HfJson& obj, const std::string& key, const JsonPlace& at);
// A {"String": s} or {"Regex": r} pattern; sets is_regex.
std::string split_pattern(const HfJson& obj, const std::string& key, const JsonPlace& at, bool& is_regex);
// Only these keys may carry a value other than their listed no-op default; anything else is refused so a
// file never silently means something gtpo does not do. `allowed` lists every key gtpo reads.
void reject_unknown_keys(const HfJson& obj, std::initializer_list<const char*> allowed, const JsonPlace& at);

}  // namespace gtpo::data::hf
