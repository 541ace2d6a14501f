#include "runtime/io/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>

#include "runtime/error.h"

namespace gtpo::io {

YAML::Node load_yaml(const std::string& text, const std::string& where) {
  // yaml-cpp reads a NUL byte as an escape and names the byte after it: a text file holds none.
  if (const std::size_t at = text.find('\0'); at != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
    fail(where, ":", std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n') + 1, ":",
         at - line_start + 1, ": a NUL byte (byte ", at, "): a YAML file is text (data after its end?)");
  }
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(where, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg);
  }
}

std::string line_of(const std::string& where, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.is_null() ? where : where + ":" + std::to_string(m.line + 1);
}

std::vector<ConfigValue> read_yaml_section(const YAML::Node& mapping, const std::string& where,
                                           const std::string& section) {
  std::vector<ConfigValue> out;
  if (!mapping || mapping.IsNull()) return out;
  GTPO_CHECK(mapping.IsMap(), where, ": section '", section, "' must be a mapping of keys to values");
  std::map<std::string, std::string> first_line;
  for (const auto& kv : mapping) {
    const std::string key = kv.first.Scalar();
    const std::string at = line_of(where, kv.first);
    const auto [seen, inserted] = first_line.emplace(key, at);
    GTPO_CHECK(inserted, at, ": ", section, ".", key, " appears twice (first at ", seen->second,
               "); give each key once");
    const YAML::Node& value = kv.second;
    if (value.IsSequence()) {  // a list of mappings: one LIST[i].FIELD value per field of each item
      for (std::size_t i = 0; i < value.size(); ++i) {
        const YAML::Node& item = value[i];
        const std::string item_at = line_of(where, item);
        const std::string name = key + "[" + std::to_string(i) + "]";
        GTPO_CHECK(item.IsMap(), item_at, ": ", section, ".", key,
                   " must be a single value, not a list (only list keys take a list, of mappings like "
                   "'- name: x')");
        for (ConfigValue& v : read_yaml_section(item, where, section + "." + name)) {
          GTPO_CHECK(!v.key.empty() && v.key.find_first_of("[]") == std::string::npos, v.where, ": ", section, ".",
                     name, ".", v.key, ": a list item holds single values, not lists");
          out.push_back({v.where, section, name + "." + v.key, v.value});
        }
      }
      continue;
    }
    std::string text;
    if (!value.IsNull()) {
      GTPO_CHECK(value.IsScalar(), at, ": ", section, ".", key, " must be a single value, not a mapping");
      text = value.Scalar();
    }
    out.push_back({at, section, key, text});
  }
  return out;
}

}  // namespace gtpo::io
