// A small, safe evaluator for countdown answers: non-negative integer literals, + - * / and
// parentheses, evaluated in exact rational arithmetic. It never throws on bad input: every
// problem (syntax, division by zero, overflow, too long or too deep) becomes an error string.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gtpo::data {

// A reduced fraction num/den with den > 0.
struct Rational {
  int64_t num = 0;
  int64_t den = 1;
  bool operator==(const Rational&) const = default;
  bool is_integer() const { return den == 1; }
};

struct Evaluation {
  std::optional<Rational> value;  // set on success
  std::string error;              // why it failed, when value is empty
  std::vector<int64_t> literals;  // the integer literals in order of appearance
};

// Limits that keep hostile or runaway completions cheap to reject.
inline constexpr std::size_t kMaxExpressionLength = 256;
inline constexpr int kMaxExpressionDepth = 32;
inline constexpr std::size_t kMaxLiteralDigits = 18;

// Grammar (spaces allowed between tokens):
//   expr   := term (('+' | '-') term)*
//   term   := factor (('*' | '/') factor)*
//   factor := NUMBER | '(' expr ')'
//   NUMBER := '0' | [1-9][0-9]*        (at most 18 digits; no sign, no leading zeros)
// There is no unary minus. '/' is exact rational division.
Evaluation evaluate_expression(std::string_view text);

}  // namespace gtpo::data
