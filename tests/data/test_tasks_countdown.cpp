// countdown: generation guarantees and the verifier's rules.
#include <catch2/catch.hpp>

#include <algorithm>

#include "data/tasks/registry.h"

using namespace gtpo::data;

namespace {
Problem fixed_problem(std::vector<int64_t> numbers, int64_t target) {
  Problem p;
  p.task = "countdown";
  p.numbers = std::move(numbers);
  p.target = target;
  return p;
}
}  // namespace

TEST_CASE("countdown problems are solvable and well shaped", "[tasks][countdown]") {
  for (int d = 1; d <= 4; ++d) {
    const auto task = make_task("countdown", {{"difficulty", std::to_string(d)}});
    const std::size_t count = d == 1 ? 3 : 4;
    const int64_t max_number = d <= 2 ? 9 : d == 3 ? 25 : 100;
    for (uint64_t i = 0; i < 1000; ++i) {
      const Problem p = task->generate(2, Split::train, i);
      INFO(p.prompt);
      REQUIRE(p.numbers.size() == count);
      for (int64_t n : p.numbers) REQUIRE((n >= 1 && n <= max_number));
      REQUIRE((p.target >= 2 && p.target <= 999));
      REQUIRE(std::find(p.numbers.begin(), p.numbers.end(), p.target) == p.numbers.end());
      REQUIRE(task->verify(p, "#### " + p.answer));
      // The prompt lists the numbers and the target.
      std::string expected = "use";
      for (int64_t n : p.numbers) {
        expected += ' ';  // appended piecewise: `" " + std::to_string(n)` trips GCC 12's -Wrestrict
        expected += std::to_string(n);
      }
      REQUIRE(p.prompt == expected + " to make " + std::to_string(p.target) + "\n");
    }
  }
}

TEST_CASE("countdown verifier accepts any exact expression", "[tasks][countdown]") {
  const auto task = make_task("countdown");
  const Problem p = fixed_problem({3, 5, 7}, 22);
  CHECK(task->verify(p, "#### 3*5+7"));
  CHECK(task->verify(p, "#### 7+5*3"));
  CHECK(task->verify(p, "#### (7 + 5*3)"));
  CHECK(task->verify(p, "3*5=15 15+7=22\n#### 3*5+7"));
  CHECK(task->verify(p, "#### 3*5+7 = 22"));
  CHECK(task->verify(p, "#### 3*5+7=22.0"));
  // Not every number has to be used.
  const Problem q = fixed_problem({3, 5, 7, 2}, 15);
  CHECK(task->verify(q, "#### 3*5"));
  // Non-integer intermediates are allowed: 7/2*4 = 14.
  const Problem r = fixed_problem({7, 2, 4}, 14);
  CHECK(task->verify(r, "#### 7/2*4"));
  // Duplicated numbers may be used as often as they are given.
  const Problem s = fixed_problem({5, 5, 2}, 12);
  CHECK(task->verify(s, "#### 5+5+2"));
}

TEST_CASE("countdown verifier rejects invalid answers without throwing", "[tasks][countdown]") {
  const auto task = make_task("countdown");
  const Problem p = fixed_problem({3, 5, 7}, 22);
  const char* wrong[] = {
      "#### 3*5+6",            // 6 not given
      "#### 3*5+7+3-3",        // 3 used three times
      "#### 3*7+1",            // 1 not given
      "#### 3*5+7-7/7+7/7",    // reuse
      "#### 22",               // the target is not an expression of the numbers
      "#### 3*5+7=23",         // wrong claimed result
      "#### 3*5+7=x",          // malformed claim
      "#### 3*5+7=22=22",      // two '='
      "#### 3*5*7",            // wrong value
      "#### 7/(5-5)",          // division by zero (and reuse)
      "#### 3/(7-7)+22",       // division by zero
      "#### (3*5+7",           // unbalanced
      "#### 3*5+7)",           // unbalanced
      "#### 3 5 7",            // no operators
      "#### -3+5*5",           // unary minus
      "#### 3*5+07",           // leading zero
      "#### 3x5+7",            // unknown operator
      "#### ",                 // empty
      "####",                  // empty
      "3*5+7",                 // no marker
      "",                      // nothing
      "#### 99999999999999999999*3",  // literal too long
  };
  for (const char* completion : wrong) {
    INFO(completion);
    Verdict v;
    REQUIRE_NOTHROW(v = task->check(p, completion));
    CHECK_FALSE(v.correct);
  }
  // Format: a parseable expression with nothing after its line is well formed even when wrong.
  CHECK(task->check(p, "#### 3*5*7").well_formed);
  CHECK_FALSE(task->check(p, "#### 3*5+").well_formed);
  CHECK_FALSE(task->check(p, "#### 3*5+7\nextra").well_formed);
  CHECK(task->check(p, "#### 3*5+7\nextra").correct);
  // Rational equality is exact: 22 is not reached by 3*7+5/7.
  CHECK_FALSE(task->verify(p, "#### 3*7+5/7"));
}

TEST_CASE("countdown verifier survives random byte strings", "[tasks][countdown]") {
  const auto task = make_task("countdown");
  const Problem p = fixed_problem({3, 5, 7}, 22);
  Rng rng(123);
  const std::string chars = "0123456789+-*/()= #\n.x";
  for (int i = 0; i < 20000; ++i) {
    std::string s = "#### ";
    const auto len = rng.below(30);
    for (uint64_t k = 0; k < len; ++k) s += chars[rng.below(chars.size())];
    REQUIRE_NOTHROW(task->check(p, s));
  }
}
