// Splits a template into tokens the way jinja2's lexer does with transformers' settings
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False): text between tags, the tags'
// whitespace control ({%- -%} {{- -}} {%+ +%}), comments dropped, and the tokens of each expression.
#pragma once
#include <string>
#include <vector>

namespace gtpo::data::chat {

struct Token {
  enum class Type { Text, VarBegin, VarEnd, BlockBegin, BlockEnd, Name, String, Int, Float, Op, End };
  Type type;
  std::string text;  // Text: the literal text; String: the decoded value; Name/Op/Int/Float: as written
  int line = 1;
};

// Throws TemplateError "LABEL:LINE: ..." for an unterminated tag, comment or string, or a stray character.
std::vector<Token> tokenize(const std::string& source, const std::string& label);

}  // namespace gtpo::data::chat
