#include "data/tokenizer/hf/json_access.h"

#include <cstring>

namespace gtpo::data::hf {

std::string component_type(const HfJson& obj, const JsonPlace& at) {
  if (!obj.is_object()) json_fail(at, "expected an object, found ", obj.type_name());
  auto it = obj.find("type");
  if (it == obj.end() || !it->is_string()) json_fail(at, "missing string key 'type'");
  return it->get<std::string>();
}

const HfJson* optional_field(const HfJson& obj, const std::string& key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

bool optional_bool(const HfJson& obj, const std::string& key, bool fallback, const JsonPlace& at) {
  const HfJson* v = optional_field(obj, key);
  if (!v) return fallback;
  if (!v->is_boolean()) json_fail(at, "'", key, "' must be a boolean, found ", v->dump());
  return v->get<bool>();
}

const HfJson& required_field(const HfJson& obj, const std::string& key, const JsonPlace& at) {
  auto it = obj.find(key);
  if (it == obj.end()) json_fail(at, "missing key '", key, "'");
  return *it;
}

std::string required_string(const HfJson& obj, const std::string& key, const JsonPlace& at) {
  const HfJson& v = required_field(obj, key, at);
  if (!v.is_string()) json_fail(at, "'", key, "' must be a string, found ", v.dump());
  return v.get<std::string>();
}

std::string split_pattern(const HfJson& obj, const std::string& key, const JsonPlace& at, bool& is_regex) {
  const HfJson& p = required_field(obj, key, at);
  if (p.is_object() && p.size() == 1) {
    if (auto s = p.find("String"); s != p.end() && s->is_string()) {
      is_regex = false;
      return s->get<std::string>();
    }
    if (auto r = p.find("Regex"); r != p.end() && r->is_string()) {
      is_regex = true;
      return r->get<std::string>();
    }
  }
  json_fail(at, "'", key, "' must be {\"String\": ...} or {\"Regex\": ...}, found ", p.dump());
}

void reject_unknown_keys(const HfJson& obj, std::initializer_list<const char*> allowed, const JsonPlace& at) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = it.key() == "type";
    for (const char* a : allowed) known = known || it.key() == a;
    if (!known) json_fail(at, "unsupported option '", it.key(), "'");
  }
}

}  // namespace gtpo::data::hf
