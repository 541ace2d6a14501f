// Values printed as Python prints them: str() for {{ }} output, repr() for items inside printed lists and
// dicts, float repr (shortest round-trip, "1.0", "1e+20"), and transformers' tojson filter, which is
// json.dumps(value, ensure_ascii=False, indent=indent).
#pragma once
#include <optional>
#include <string>

#include "data/chat/value.h"

namespace gtpo::data::chat {

std::string to_str(const Value& v);   // Python str(); Undefined prints as ""
std::string to_repr(const Value& v);  // Python repr()
std::string float_repr(double d);
// json.dumps's options as transformers' tojson passes them (ensure_ascii defaults to False there).
struct JsonStyle {
  std::optional<int> indent;
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::string> item_separator, key_separator;  // separators=(item, key); unset: json's defaults
};
// json.dumps(v, ...) with STYLE; Undefined and callables are errors.
std::string to_json(const Value& v, const JsonStyle& style = {});
// Python type name, for messages ("str", "int", "list", "dict", "NoneType", "Undefined").
std::string type_name(const Value& v);

}  // namespace gtpo::data::chat
