// The one table of run-config keys (internal to rl/run_config*.cpp). Each row knows its section, name,
// type, meaning, how to set it from text and how to print it back, so parsing, overrides, the resolved
// YAML and docs/configuration.md all come from the same place. The model section's keys and the task's
// own options are validated by their owners (parse_model_config, make_task) and are not rows here.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "rl/run_config.h"

namespace gtpo::rl::schema {

struct Key {
  std::string section;
  std::string name;
  std::string type;     // for docs and errors: "integer >= 0", "true|false", "a|b|c", ...
  std::string meaning;  // one line for docs
  // Sets the field from text; throws gtpo::Error "expected TYPE, got 'VALUE'" (without the key: callers
  // prefix where and section.key).
  std::function<void(RunConfig&, const std::string&)> set;
  // The field's value as text that set() accepts.
  std::function<std::string(const RunConfig&)> get;
  bool quoted = false;  // free text: double-quoted in YAML output

  std::string dotted() const { return section + "." + name; }
};

// Every row, in documentation order.
const std::vector<Key>& keys();
// Nullptr when SECTION has no key NAME.
const Key* find(const std::string& section, const std::string& name);
// The sections of a config file, in documentation order (model first).
const std::vector<std::string>& sections();
bool is_section(const std::string& name);
// Names of SECTION's rows, comma-separated, for "valid keys" errors.
std::string key_list(const std::string& section);

// Keys of the task section that are the section's own; every other key is a task option.
bool is_task_own_key(const std::string& name);

// "a, b, c".
std::string join(const std::vector<std::string>& items, const char* sep = ", ");
// A YAML double-quoted scalar: every byte that YAML would read differently is escaped.
std::string yaml_quote(const std::string& text);

}  // namespace gtpo::rl::schema
