#include "data/verify/expression.h"

namespace gtpo::data {

namespace {

using i128 = __int128;

// Builds a reduced rational from 128-bit parts; nullopt when it does not fit in 64 bits.
std::optional<Rational> make_rational(i128 num, i128 den) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  i128 a = num < 0 ? -num : num;
  i128 b = den;
  while (b != 0) {
    const i128 t = a % b;
    a = b;
    b = t;
  }
  if (a > 1) {
    num /= a;
    den /= a;
  }
  constexpr i128 kMax = INT64_MAX;
  if (num > kMax || num < -kMax || den > kMax) return std::nullopt;
  return Rational{static_cast<int64_t>(num), static_cast<int64_t>(den)};
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Evaluation run() {
    Evaluation out;
    if (text_.size() > kMaxExpressionLength) {
      out.error = "expression longer than " + std::to_string(kMaxExpressionLength) + " characters";
      return out;
    }
    skip_spaces();
    if (pos_ == text_.size()) {
      out.error = "empty expression";
      return out;
    }
    auto value = expr(0);
    if (value && pos_ != text_.size()) fail_here("unexpected character");
    if (!error_.empty()) {
      out.error = error_;
    } else {
      out.value = value;
    }
    out.literals = std::move(literals_);
    return out;
  }

 private:
  std::optional<Rational> expr(int depth) {
    auto left = term(depth);
    while (left) {
      skip_spaces();
      if (pos_ == text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) break;
      const char op = text_[pos_++];
      const auto right = term(depth);
      if (!right) return std::nullopt;
      const i128 ln = left->num, ld = left->den, rn = right->num, rd = right->den;
      left = make_rational(op == '+' ? ln * rd + rn * ld : ln * rd - rn * ld, ld * rd);
      if (!left) return overflow();
    }
    return left;
  }

  std::optional<Rational> term(int depth) {
    auto left = factor(depth);
    while (left) {
      skip_spaces();
      if (pos_ == text_.size() || (text_[pos_] != '*' && text_[pos_] != '/')) break;
      const char op = text_[pos_++];
      const auto right = factor(depth);
      if (!right) return std::nullopt;
      const i128 ln = left->num, ld = left->den, rn = right->num, rd = right->den;
      if (op == '*') {
        left = make_rational(ln * rn, ld * rd);
      } else {
        if (rn == 0) return fail_here("division by zero");
        left = make_rational(ln * rd, ld * rn);
      }
      if (!left) return overflow();
    }
    return left;
  }

  std::optional<Rational> factor(int depth) {
    skip_spaces();
    if (pos_ == text_.size()) return fail_here("expression ends early");
    const char c = text_[pos_];
    if (c == '(') {
      if (depth + 1 > kMaxExpressionDepth) return fail_here("parentheses nested too deeply");
      ++pos_;
      auto inner = expr(depth + 1);
      if (!inner) return std::nullopt;
      skip_spaces();
      if (pos_ == text_.size() || text_[pos_] != ')') return fail_here("missing ')'");
      ++pos_;
      return inner;
    }
    if (c < '0' || c > '9') return fail_here("expected a number or '('");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    const std::string_view digits = text_.substr(start, pos_ - start);
    if (digits.size() > 1 && digits[0] == '0') return fail_at(start, "number with a leading zero");
    if (digits.size() > kMaxLiteralDigits) return fail_at(start, "number too long");
    int64_t value = 0;
    for (char d : digits) value = value * 10 + (d - '0');
    literals_.push_back(value);
    return Rational{value, 1};
  }

  void skip_spaces() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }

  std::nullopt_t fail_at(std::size_t where, const std::string& why) {
    if (error_.empty()) error_ = why + " at position " + std::to_string(where);
    return std::nullopt;
  }
  std::nullopt_t fail_here(const std::string& why) { return fail_at(pos_, why); }
  std::nullopt_t overflow() { return fail_here("arithmetic overflow"); }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::string error_;
  std::vector<int64_t> literals_;
};

}  // namespace

Evaluation evaluate_expression(std::string_view text) { return Parser(text).run(); }

}  // namespace gtpo::data
