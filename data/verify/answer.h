// Final-answer extraction and numeric-aware comparison, shared by every task and by JSONL datasets.
// The format is documented in docs/tasks.md: the answer is the text after the LAST "####" up to the
// end of that line; a completion is well formed when that answer parses and nothing but whitespace
// follows its line.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "data/verify/verdict.h"

namespace gtpo::data {

inline constexpr std::string_view kAnswerMarker = "####";

struct ExtractedAnswer {
  std::string text;         // trimmed answer text (may be empty)
  bool clean_tail = false;  // only whitespace follows the answer's line
};

// The answer after the last "####", or nullopt when the completion has no marker.
std::optional<ExtractedAnswer> extract_answer(std::string_view completion);

// Canonical decimal form of a number written as a person would, or nullopt if TEXT is not one.
// Accepts: surrounding/inner whitespace, leading '+' or '-', one '$' after the sign, thousands
// commas in correct groups of three ("1,234,567"), a decimal point, one trailing '.' ("42.").
// Produces: no leading zeros, no trailing fractional zeros, no '.' for integers, "0" for -0.
// Examples: " +0042.50 " -> "42.5", "1,000" -> "1000", "42.0" -> "42", "-0" -> "0".
std::optional<std::string> normalize_number(std::string_view text);

// Removes all whitespace: the comparison form of non-numeric answers.
std::string strip_whitespace(std::string_view text);

// Equal as numbers when both sides are numbers, otherwise equal after removing whitespace.
bool answers_match(std::string_view expected, std::string_view got);

// Verdict for a task whose answer is a single number (or exact string) EXPECTED.
Verdict check_final_answer(std::string_view expected, std::string_view completion);

}  // namespace gtpo::data
