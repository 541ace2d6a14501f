// Answer extraction, numeric normalisation and the final-answer verdict.
#include <catch2/catch.hpp>

#include "data/verify/answer.h"

using namespace gtpo::data;

TEST_CASE("normalize_number canonicalises numbers written by people", "[verify]") {
  const std::pair<const char*, const char*> cases[] = {
      {"42", "42"},       {" 42 ", "42"},      {"+42", "42"},       {"0042", "42"},    {"42.0", "42"},
      {"42.500", "42.5"}, {"-0", "0"},         {"-0.0", "0"},       {"-7", "-7"},      {"1,234", "1234"},
      {"1,234,567", "1234567"},                {"$18", "18"},       {"-$5", "-5"},     {"42.", "42"},
      {".5", "0.5"},      {"0", "0"},          {"000", "0"},        {"1 000", "1000"}, {"- 3", "-3"},
  };
  for (const auto& [in, out] : cases) {
    INFO("input '" << in << "'");
    const auto got = normalize_number(in);
    REQUIRE(got.has_value());
    CHECK(*got == out);
  }
  for (const char* bad : {"", " ", "+", "-", "abc", "4a", "1,23", "12,3456", ",123", "1.2.3", "4..", ".", "1/2",
                          "0x10", "1e5", "--4", "$", "42 apples"}) {
    INFO("input '" << bad << "'");
    CHECK_FALSE(normalize_number(bad).has_value());
  }
}

TEST_CASE("answers_match is numeric-aware and otherwise exact up to whitespace", "[verify]") {
  CHECK(answers_match("42", "42.0"));
  CHECK(answers_match("1000", "1,000"));
  CHECK(answers_match("-5", " -005 "));
  CHECK_FALSE(answers_match("42", "43"));
  CHECK_FALSE(answers_match("42", "42 apples"));
  CHECK_FALSE(answers_match("0.5", "1/2"));
  CHECK(answers_match("1/2", " 1 / 2"));
  CHECK_FALSE(answers_match("1/2", "2/4"));
}

TEST_CASE("extract_answer takes the text after the last marker up to the end of its line", "[verify]") {
  auto a = extract_answer("7+5=12\n#### 12");
  REQUIRE(a);
  CHECK(a->text == "12");
  CHECK(a->clean_tail);

  a = extract_answer("#### 1\n#### 2  \n\n");
  REQUIRE(a);
  CHECK(a->text == "2");
  CHECK(a->clean_tail);

  a = extract_answer("#### 3\nmore text");
  REQUIRE(a);
  CHECK(a->text == "3");
  CHECK_FALSE(a->clean_tail);

  a = extract_answer("####");
  REQUIRE(a);
  CHECK(a->text.empty());

  CHECK_FALSE(extract_answer("the answer is 12").has_value());
  CHECK_FALSE(extract_answer("").has_value());
  CHECK_FALSE(extract_answer("### 12").has_value());
}

TEST_CASE("check_final_answer: correctness and format", "[verify]") {
  Verdict v = check_final_answer("132", "7+5=12 4+8+1=13\n#### 132");
  CHECK(v.correct);
  CHECK(v.well_formed);
  CHECK(v.has_answer);
  CHECK(v.extracted == "132");

  v = check_final_answer("132", "#### 131");
  CHECK_FALSE(v.correct);
  CHECK(v.well_formed);

  v = check_final_answer("132", "#### +0132.0");
  CHECK(v.correct);

  // Correct but followed by more text: right answer, wrong format.
  v = check_final_answer("132", "#### 132\n#### oops 7");
  CHECK_FALSE(v.correct);  // the LAST marker counts
  v = check_final_answer("132", "#### 132\nand more");
  CHECK(v.correct);
  CHECK_FALSE(v.well_formed);

  v = check_final_answer("132", "132");
  CHECK_FALSE(v.correct);
  CHECK_FALSE(v.well_formed);
  CHECK_FALSE(v.has_answer);

  v = check_final_answer("132", "#### one hundred");
  CHECK_FALSE(v.correct);
  CHECK_FALSE(v.well_formed);  // expected a number

  v = check_final_answer("132", "####");
  CHECK_FALSE(v.correct);
  CHECK_FALSE(v.well_formed);

  // Non-numeric expected answers compare as text.
  CHECK(check_final_answer("x=3", "#### x = 3").correct);
}
