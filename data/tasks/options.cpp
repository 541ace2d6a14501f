#include "data/tasks/options.h"

#include <algorithm>

#include "runtime/config_codec.h"
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

namespace {
// The shared codec's error, prefixed with the task and the option.
template <typename T>
T read(const config::Codec<T>& codec, const std::string& task, const std::string& key, const std::string& text) {
  try {
    return codec.parse(text);
  } catch (const Error& e) {
    fail("task ", task, ": option '", key, "': ", e.what());
  }
}
}  // namespace

int64_t TaskOptions::get_int(const std::string& task, const std::string& key, int64_t fallback, int64_t min,
                             int64_t max) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : read(config::integer<int64_t>(min, max), task, key, it->second);
}

double TaskOptions::get_double(const std::string& task, const std::string& key, double fallback, double min,
                               double max) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : read(config::number(min, max), task, key, it->second);
}

bool TaskOptions::get_bool(const std::string& task, const std::string& key, bool fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : read(config::boolean(), task, key, it->second);
}

std::string TaskOptions::get_string(const std::string&, const std::string& key, const std::string& fallback) const {
  const auto it = values_.find(key);
  return it == values_.end() ? fallback : it->second;
}

void TaskOptions::check_known(const std::string& task, const std::vector<std::string>& valid) const {
  for (const auto& [key, value] : values_) {
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    fail("task ", task, ": unknown option '", key, "' (valid options: ", config::join(valid), ")");
  }
}

}  // namespace gtpo::data
