// jinja2's filters as chat templates use them (`x | trim`, `tools | tojson(indent=4)`, `messages |
// selectattr("role", "equalto", "user") | list`, ...), with transformers' tojson. docs/chat-templates.md
// lists them; an unknown filter is a ValueError naming it.
#pragma once
#include <cstddef>
#include <string>

#include "data/chat/value.h"

namespace gtpo::data::chat {

struct FilterLimits {
  std::size_t max_bytes = 0;  // the longest string a filter may build
};

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args, const FilterLimits& limits);

}  // namespace gtpo::data::chat
