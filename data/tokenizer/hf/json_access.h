// Checked access to the components of a parsed tokenizer.json (nlohmann::json, unordered: a 150K-entry
// vocabulary parses in a fraction of a second). Errors read
//   tokenizer file 'PATH': pre_tokenizer.pretokenizers[1]: unsupported type 'X' (supported: ...)
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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

// The steps of a "Sequence" component: the array obj[key], each item parsed by PARSE(item, place). A step
// PARSE returns as null (one that does nothing) is left out.
template <typename Step, typename Parse>
std::vector<std::unique_ptr<Step>> parse_steps(const HfJson& obj, const std::string& key, const JsonPlace& at,
                                               Parse parse) {
  const HfJson& list = required_field(obj, key, at);
  if (!list.is_array()) json_fail(at, "'", key, "' must be an array");
  std::vector<std::unique_ptr<Step>> steps;
  const JsonPlace items = at.child(key);
  for (std::size_t i = 0; i < list.size(); ++i)
    if (auto step = parse(list[i], items.index(i))) steps.push_back(std::move(step));
  return steps;
}

}  // namespace gtpo::data::hf
