#include "data/tasks/options.h"

#include <algorithm>
#include <charconv>

#include "runtime/error.h"

namespace gtpo::data {

TaskOptions TaskOptions::from_json(const nlohmann::json& object) {
  GTPO_CHECK(object.is_object() || object.is_null(), "task options must be a mapping");
  TaskOptions out;
  if (object.is_null()) return out;
  for (const auto& [key, value] : object.items()) {
    if (value.is_string()) {
      out.set(key, value.get<std::string>());
    } else if (value.is_boolean() || value.is_number()) {
      out.set(key, value.dump());
    } else {
      fail("task option '", key, "' must be a scalar (got ", value.type_name(), ")");
    }
  }
  return out;
}

int64_t TaskOptions::get_int(const std::string& task, const std::string& key, int64_t fallback, int64_t min,
                             int64_t max) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    fail("task ", task, ": option '", key, "' must be an integer in [", min, ", ", max, "], got '", text, "'");
  }
  return value;
}

double TaskOptions::get_double(const std::string& task, const std::string& key, double fallback, double min,
                               double max) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !(value >= min && value <= max)) {
    fail("task ", task, ": option '", key, "' must be a number in [", min, ", ", max, "], got '", text, "'");
  }
  return value;
}

bool TaskOptions::get_bool(const std::string& task, const std::string& key, bool fallback) const {
  const auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  fail("task ", task, ": option '", key, "' must be true or false, got '", it->second, "'");
}

std::string TaskOptions::get_string(const std::string&, const std::string& key, const std::string& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

void TaskOptions::check_known(const std::string& task, const std::vector<std::string>& valid) const {
  for (const auto& [key, value] : values_) {
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    std::string list;
    for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
    fail("task ", task, ": unknown option '", key, "' (valid options: ", list, ")");
  }
}

}  // namespace gtpo::data
