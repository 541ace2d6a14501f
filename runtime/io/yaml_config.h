// Reading YAML config files as flat (where, section, key, value) assignments: one reader for every config
// file (run configs, checkpoints' config.yaml), so syntax errors, duplicate keys and non-scalar values are
// reported the same way everywhere, with the file and line.
#pragma once
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace gtpo::io {

struct ConfigValue {
  std::string where;  // "config.yaml:12" or "command line"
  std::string section, key, value;
};

// Parses TEXT; a syntax error names WHERE, the line and the column.
YAML::Node load_yaml(const std::string& text, const std::string& where);
// "WHERE:LINE" of a node (WHERE alone when the node has no position).
std::string line_of(const std::string& where, const YAML::Node& node);
// The scalar entries of one section's mapping, in file order. A key given twice is an error naming both
// lines; a mapping as a value is an error naming the key; `key:` with nothing after it reads as "". A list of
// mappings (`functions: [{name: a, weight: 1}]`) becomes one value per field of each item, keyed
// "functions[0].name", "functions[0].weight", ... (config::split_item_key reads such keys); an item that is
// not a mapping, or holds a list itself, is an error naming its line; `functions: []` gives no values.
std::vector<ConfigValue> read_yaml_section(const YAML::Node& mapping, const std::string& where,
                                           const std::string& section);

}  // namespace gtpo::io
