#include "data/verify/answer.h"

namespace gtpo::data {

namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Integer part with optional thousands commas: "1234" or "1,234,567". Returns digits only.
std::optional<std::string> integer_digits(std::string_view s) {
  if (s.find(',') == std::string_view::npos) {
    for (char c : s) {
      if (!is_digit(c)) return std::nullopt;
    }
    return std::string(s);
  }
  // With commas every group after the first must be exactly three digits, so "1,23" is rejected
  // rather than silently read as 123.
  std::string digits;
  std::size_t group_start = 0;
  bool first = true;
  while (true) {
    const std::size_t comma = s.find(',', group_start);
    const std::string_view group = s.substr(group_start, comma == std::string_view::npos ? std::string_view::npos
                                                                                         : comma - group_start);
    if (group.empty() || group.size() > 3 || (!first && group.size() != 3)) return std::nullopt;
    for (char c : group) {
      if (!is_digit(c)) return std::nullopt;
    }
    digits += group;
    first = false;
    if (comma == std::string_view::npos) break;
    group_start = comma + 1;
  }
  return digits;
}

}  // namespace

std::optional<ExtractedAnswer> extract_answer(std::string_view completion) {
  const std::size_t marker = completion.rfind(kAnswerMarker);
  if (marker == std::string_view::npos) return std::nullopt;
  std::string_view rest = completion.substr(marker + kAnswerMarker.size());
  const std::size_t newline = rest.find('\n');
  ExtractedAnswer out;
  out.text = std::string(trim(rest.substr(0, newline)));
  out.clean_tail = newline == std::string_view::npos || trim(rest.substr(newline)).empty();
  return out;
}

std::string strip_whitespace(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!is_space(c)) out += c;
  }
  return out;
}

std::optional<std::string> normalize_number(std::string_view text) {
  const std::string compact = strip_whitespace(text);
  std::string_view s = compact;
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (!s.empty() && s.front() == '$') s.remove_prefix(1);
  // A sentence-ending full stop ("42.") is not part of the number.
  if (!s.empty() && s.back() == '.') s.remove_suffix(1);
  if (s.empty()) return std::nullopt;

  const std::size_t dot = s.find('.');
  const std::string_view int_part = s.substr(0, dot);
  const std::string_view frac_part = dot == std::string_view::npos ? std::string_view{} : s.substr(dot + 1);
  if (dot != std::string_view::npos && frac_part.empty()) return std::nullopt;  // "4.." or "."
  for (char c : frac_part) {
    if (!is_digit(c)) return std::nullopt;
  }
  if (int_part.empty() && frac_part.empty()) return std::nullopt;
  std::optional<std::string> digits = int_part.empty() ? std::string("0") : integer_digits(int_part);
  if (!digits) return std::nullopt;

  std::string whole = *digits;
  const std::size_t first_nonzero = whole.find_first_not_of('0');
  whole = first_nonzero == std::string::npos ? "0" : whole.substr(first_nonzero);
  std::string frac(frac_part);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();

  std::string out = whole;
  if (!frac.empty()) out += "." + frac;
  if (negative && out != "0") out = "-" + out;
  return out;
}

bool answers_match(std::string_view expected, std::string_view got) {
  const auto a = normalize_number(expected);
  const auto b = normalize_number(got);
  if (a && b) return *a == *b;
  if (a || b) return false;
  return strip_whitespace(expected) == strip_whitespace(got);
}

Verdict check_final_answer(std::string_view expected, std::string_view completion) {
  Verdict v;
  const auto answer = extract_answer(completion);
  if (!answer) return v;
  v.has_answer = true;
  v.extracted = answer->text;
  v.correct = !answer->text.empty() && answers_match(expected, answer->text);
  // Well formed means "parses as the kind of answer expected": a number when the expected
  // answer is one, otherwise any non-empty text.
  const bool parses = normalize_number(expected) ? normalize_number(answer->text).has_value() : !answer->text.empty();
  v.well_formed = parses && answer->clean_tail;
  return v;
}

}  // namespace gtpo::data
