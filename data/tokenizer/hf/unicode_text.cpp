#include "data/tokenizer/hf/unicode_text.h"

#include <utf8proc.h>

#include <cstdlib>

#include "data/tokenizer/utf8.h"
#include "runtime/error.h"

namespace gtpo::data::hf {
namespace {

std::string map_valid(std::string_view run, utf8proc_option_t options) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(run.data()),
                                          static_cast<utf8proc_ssize_t>(run.size()), &out, options);
  GTPO_CHECK(n >= 0, "utf8proc: ", utf8proc_errmsg(n));
  std::string result(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return result;
}

}  // namespace

void for_each_valid_run(std::string_view text, const std::function<void(std::size_t, std::size_t, bool)>& fn) {
  std::size_t pos = 0;
  std::size_t run_start = 0;
  while (pos < text.size()) {
    std::size_t next = pos;
    char32_t cp = 0;
    if (utf8_next(text, next, cp)) {
      pos = next;
      continue;
    }
    if (pos > run_start) fn(run_start, pos - run_start, true);
    fn(pos, 1, false);
    pos += 1;
    run_start = pos;
  }
  if (pos > run_start) fn(run_start, pos - run_start, true);
}

std::string normalize_unicode(std::string_view text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNFC: options |= UTF8PROC_COMPOSE; break;
    case NormalForm::kNFD: options |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::kNFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::kNFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  std::string out;
  out.reserve(text.size());
  for_each_valid_run(text, [&](std::size_t off, std::size_t len, bool valid) {
    if (!valid) {
      out.append(text.substr(off, len));
    } else {
      out += map_valid(text.substr(off, len), static_cast<utf8proc_option_t>(options));
    }
  });
  return out;
}

std::string lowercase_unicode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    std::size_t next = pos;
    if (!utf8_next(text, next, cp)) {
      out += text[pos++];
      continue;
    }
    utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
    pos = next;
  }
  return out;
}

bool is_white_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_numeric(char32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

int decimal_digit(char32_t cp) {
  const auto nd = [](char32_t c) {
    return utf8proc_category(static_cast<utf8proc_int32_t>(c)) == UTF8PROC_CATEGORY_ND;
  };
  if (!nd(cp)) return -1;
  // Unicode's decimal digits come in runs of whole 0-9 sequences: the value is the offset from the run's
  // start.
  char32_t start = cp;
  while (start > 0 && nd(start - 1)) --start;
  return static_cast<int>((cp - start) % 10);
}

bool is_word_char(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return cp == 0x200C || cp == 0x200D;  // Join_Control
  }
}

}  // namespace gtpo::data::hf
