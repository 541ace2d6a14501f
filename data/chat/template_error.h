// Errors of chat templates. Helpers that know no template position throw ValueError; the evaluator adds
// "LABEL:LINE: " where it catches one, so every message a user sees names the template and its line.
#pragma once
#include <string>

#include "runtime/error.h"

namespace gtpo::data::chat {

// A problem with a value (wrong type, division by zero, ...), still without a template position.
class ValueError : public gtpo::Error {
 public:
  explicit ValueError(const std::string& message) : gtpo::Error(message) {}
};

// A located error: "LABEL:LINE: message". Passed through unchanged by enclosing evaluations.
class TemplateError : public gtpo::Error {
 public:
  explicit TemplateError(const std::string& message) : gtpo::Error(message) {}
};

template <typename... Parts>
[[noreturn]] void value_error(const Parts&... parts) {
  std::ostringstream os;
  detail::append_all(os, parts...);
  throw ValueError(os.str());
}

}  // namespace gtpo::data::chat
