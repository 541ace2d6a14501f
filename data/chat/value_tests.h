// jinja2's tests (`x is defined`, `n is even`, `v is string`, ...), as `is` and select/reject use them.
#pragma once
#include <string>

#include "data/chat/value.h"

namespace gtpo::data::chat {

// Throws ValueError "no test named 'NAME'" for a test gtpo does not have.
bool apply_test(const std::string& name, const Value& value, const CallArgs& args);

}  // namespace gtpo::data::chat
