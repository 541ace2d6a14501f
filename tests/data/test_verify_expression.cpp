// The countdown expression evaluator: exact, bounded, never throws.
#include <catch2/catch.hpp>

#include <string>

#include "data/verify/expression.h"

using namespace gtpo::data;

namespace {
Rational value_of(const std::string& text) {
  const Evaluation e = evaluate_expression(text);
  INFO("expression '" << text << "': " << e.error);
  REQUIRE(e.value.has_value());
  return *e.value;
}
std::string error_of(const std::string& text) {
  const Evaluation e = evaluate_expression(text);
  INFO("expression '" << text << "'");
  REQUIRE_FALSE(e.value.has_value());
  REQUIRE_FALSE(e.error.empty());
  return e.error;
}
}  // namespace

TEST_CASE("evaluate_expression: precedence, associativity, parentheses", "[verify][expression]") {
  CHECK(value_of("3*5+7") == Rational{22, 1});
  CHECK(value_of("3+5*7") == Rational{38, 1});
  CHECK(value_of("(3+5)*7") == Rational{56, 1});
  CHECK(value_of("10-4-3") == Rational{3, 1});
  CHECK(value_of("10-(4-3)") == Rational{9, 1});
  CHECK(value_of("24/4/2") == Rational{3, 1});
  CHECK(value_of("24/(4/2)") == Rational{12, 1});
  CHECK(value_of(" ( 1 + 2 ) * ( 3 + 4 ) ") == Rational{21, 1});
  CHECK(value_of("7") == Rational{7, 1});
  CHECK(value_of("0") == Rational{0, 1});
  CHECK(value_of("3-5") == Rational{-2, 1});
}

TEST_CASE("evaluate_expression: exact rationals", "[verify][expression]") {
  CHECK(value_of("7/2") == Rational{7, 2});
  CHECK(value_of("7/2*4") == Rational{14, 1});
  CHECK(value_of("1/3+1/6") == Rational{1, 2});
  CHECK(value_of("6/4") == Rational{3, 2});
  CHECK(value_of("1/3*3").is_integer());
}

TEST_CASE("evaluate_expression: literals are recorded in order", "[verify][expression]") {
  const Evaluation e = evaluate_expression("(25-5)*3/100");
  REQUIRE(e.value);
  CHECK(e.literals == std::vector<int64_t>{25, 5, 3, 100});
}

TEST_CASE("evaluate_expression: bad input is an error, never a crash", "[verify][expression]") {
  CHECK(error_of("4/0").find("division by zero") != std::string::npos);
  CHECK(error_of("4/(2-2)").find("division by zero") != std::string::npos);
  CHECK(error_of("1/(1/2-1/2)").find("division by zero") != std::string::npos);
  for (const char* bad : {"", "   ", "3+", "+3", "-3+5", "3++4", "(3+4", "3+4)", "()", "3 4", "3a", "3.5+1",
                          "3x4", "05+1", "1234567890123456789", "3=3", "((((", "))", "*", "3+(4*)", "\n3"}) {
    error_of(bad);
  }
  // Depth and length limits.
  std::string deep(40, '(');
  deep += "1" + std::string(40, ')');
  CHECK(error_of(deep).find("nested") != std::string::npos);
  std::string shallow(30, '(');
  shallow += "1" + std::string(30, ')');
  CHECK(value_of(shallow) == Rational{1, 1});
  std::string longest = "1";
  while (longest.size() < 300) longest += "+1";
  CHECK(error_of(longest).find("longer") != std::string::npos);
}

TEST_CASE("evaluate_expression: overflow is detected", "[verify][expression]") {
  CHECK(error_of("999999999*999999999*999999999").find("overflow") != std::string::npos);
  CHECK(error_of("1/999999999/999999999/999999999").find("overflow") != std::string::npos);
  CHECK(value_of("999999999*999999999") == Rational{999999998000000001LL, 1});
}
