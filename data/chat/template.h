// A parsed Jinja template and its renderer: parse once, render with variables. The subset, the limits and
// how it differs from jinja2 are in docs/chat-templates.md. Every error is a gtpo::Error whose message
// starts "LABEL:LINE: " (LABEL names the template: a file path, "prompt.template", ...).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "data/chat/ast.h"
#include "data/chat/value.h"

namespace gtpo::data::chat {

// Bounds that keep a hostile template from hanging or exhausting memory: each is an error when passed.
struct RenderLimits {
  std::size_t max_output_bytes = 16u << 20;  // the rendered text, and any one string built on the way
  uint64_t max_steps = 20'000'000;           // statements + expressions evaluated + loop iterations
  std::size_t max_string_bytes = 512u << 20; // bytes of all strings expressions produced, summed
  int max_call_depth = 32;                   // nested macro calls
  int max_depth = 1000;                      // nested evaluations (statements in statements, expressions, calls)
};

using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  // Parses SOURCE; syntax errors name LABEL and the line.
  Template(const std::string& source, std::string label);
  // Renders with VARIABLES on top of the built-in globals (range, namespace, dict).
  std::string render(const Variables& variables, const RenderLimits& limits = {}) const;
  const std::string& label() const { return label_; }

 private:
  std::string label_;
  Body body_;
};

}  // namespace gtpo::data::chat
