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
  // The render's step count and its limit (RenderLimits::max_steps): a filter's work counts against it too.
  uint64_t* steps = nullptr;
  uint64_t max_steps = 0;
  // Adds N steps of work; past the limit, an error (so no filter input makes a render run unbounded).
  void charge(uint64_t n) const;
};

Value apply_filter(const std::string& name, const Value& value, const CallArgs& args, const FilterLimits& limits);

}  // namespace gtpo::data::chat
