// Task options: string key/value pairs (as they arrive from a YAML config or the command line)
// with typed getters whose errors name the task, the option and the accepted range.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace gtpo::data {

class TaskOptions {
 public:
  TaskOptions() = default;
  TaskOptions(std::initializer_list<std::pair<const std::string, std::string>> values) : values_(values) {}

  // Scalars of a JSON object become their text form (true -> "true", 3 -> "3"); anything else
  // (arrays, nested objects) is an error naming the key.
  static TaskOptions from_json(const nlohmann::json& object);

  void set(const std::string& key, const std::string& value) { values_[key] = value; }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::map<std::string, std::string>& values() const { return values_; }

  // Typed reads with defaults; TASK prefixes error messages ("task arith: option 'difficulty' ...").
  int64_t get_int(const std::string& task, const std::string& key, int64_t fallback, int64_t min, int64_t max) const;
  double get_double(const std::string& task, const std::string& key, double fallback, double min, double max) const;
  bool get_bool(const std::string& task, const std::string& key, bool fallback) const;
  std::string get_string(const std::string& task, const std::string& key, const std::string& fallback) const;

  // Fails when a key is not in VALID, listing the valid keys.
  void check_known(const std::string& task, const std::vector<std::string>& valid) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace gtpo::data
