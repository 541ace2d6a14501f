#include "data/tokenizer/hf/onig_regex.h"

#include <oniguruma.h>

#include <mutex>

#include "data/tokenizer/utf8.h"
#include "runtime/error.h"

namespace gtpo::data::hf {
namespace {

void initialize_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return std::string(reinterpret_cast<const char*>(buf), n > 0 ? static_cast<std::size_t>(n) : 0);
}

}  // namespace

OnigRegex::OnigRegex(const std::string& pattern, const std::string& context) {
  initialize_once();
  regex_t* reg = nullptr;
  OnigErrorInfo info;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int r = onig_new(&reg, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT,
                         &info);
  GTPO_CHECK(r == ONIG_NORMAL, context, "bad regex '", pattern, "': ", onig_message(r, &info));
  regex_ = reg;
}

OnigRegex::~OnigRegex() {
  if (regex_) onig_free(static_cast<regex_t*>(regex_));
}

std::vector<std::pair<std::size_t, std::size_t>> OnigRegex::find_all(std::string_view text) const {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  auto* reg = static_cast<regex_t*>(regex_);
  OnigRegion* region = onig_region_new();
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  std::size_t at = 0;
  bool have_last = false;
  std::size_t last_end = 0;
  while (at <= text.size()) {
    onig_region_clear(region);
    const int r = onig_search(reg, begin, end, begin + at, end, region, ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) break;
    if (r < 0) {
      onig_region_free(region, 1);
      fail("regex search failed: ", onig_message(r, nullptr));
    }
    const auto s = static_cast<std::size_t>(region->beg[0]);
    const auto e = static_cast<std::size_t>(region->end[0]);
    if (s == e && have_last && last_end == e) {
      // An empty match right where the previous one ended: step one character on (no endless loop).
      if (at >= text.size()) break;
      std::size_t next = at;
      char32_t cp = 0;
      if (!utf8_next(text, next, cp)) next = at + 1;
      at = next;
      continue;
    }
    out.emplace_back(s, e);
    have_last = true;
    last_end = e;
    if (e == s) {
      if (e >= text.size()) break;
      std::size_t next = e;
      char32_t cp = 0;
      if (!utf8_next(text, next, cp)) next = e + 1;
      at = next;
    } else {
      at = e;
    }
  }
  onig_region_free(region, 1);
  return out;
}

}  // namespace gtpo::data::hf
