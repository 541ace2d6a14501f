// The tiny run the end-to-end tests start from: a 2-layer Llama (hidden 32, 4 heads, 2 KV heads, 64
// positions) on 2-digit arithmetic, without progress lines. Each test adds the settings it is about.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace gtpo::testing {

using RunSettings = std::vector<std::pair<std::string, std::string>>;  // ("section.key", "value")

// The tiny run's YAML with SETTINGS added, or replacing the base's value of the same key. Sections keep the
// order they first appear in (the base's first).
inline std::string tiny_run_yaml(const RunSettings& settings) {
  std::vector<std::pair<std::string, RunSettings>> sections = {
      {"model",
       {{"architecture", "llama"},
        {"hidden_size", "32"},
        {"num_hidden_layers", "2"},
        {"num_attention_heads", "4"},
        {"num_key_value_heads", "2"},
        {"max_position_embeddings", "64"}}},
      {"task", {{"name", "arith"}, {"difficulty", "1"}}},
      {"log", {{"progress", "false"}}},
  };
  for (const auto& [dotted, value] : settings) {
    const std::size_t dot = dotted.find('.');
    const std::string section = dotted.substr(0, dot), key = dotted.substr(dot + 1);
    auto s = sections.begin();
    while (s != sections.end() && s->first != section) ++s;
    if (s == sections.end()) s = sections.insert(s, {section, {}});
    auto k = s->second.begin();
    while (k != s->second.end() && k->first != key) ++k;
    if (k == s->second.end()) {
      s->second.emplace_back(key, value);
    } else {
      k->second = value;
    }
  }
  std::string yaml;
  for (const auto& [section, keys] : sections) {
    yaml += section + ":\n";
    for (const auto& [key, value] : keys) yaml += "  " + key + ": " + value + "\n";
  }
  return yaml;
}

}  // namespace gtpo::testing
