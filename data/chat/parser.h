// Tokens to a statement tree: jinja2's grammar and operator precedence for the subset chat templates use
// (docs/chat-templates.md lists it). Syntax errors are TemplateError "LABEL:LINE: syntax error: ...",
// naming what was expected; nesting deeper than kMaxNesting is refused rather than recursed into.
#pragma once
#include <string>
#include <vector>

#include "data/chat/ast.h"
#include "data/chat/lexer.h"

namespace gtpo::data::chat {

inline constexpr int kMaxNesting = 100;

Body parse_template(const std::vector<Token>& tokens, const std::string& label);

}  // namespace gtpo::data::chat
