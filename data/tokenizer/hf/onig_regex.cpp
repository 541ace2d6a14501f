#include "data/tokenizer/hf/onig_regex.h"

#include <oniguruma.h>

#include <algorithm>
#include <cmath>
#include <memory>
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
  pattern_ = pattern;
  context_ = context;
  anchored_at_start_ = pattern.find("\\G") != std::string::npos;
}

OnigRegex::~OnigRegex() {
  if (regex_) onig_free(static_cast<regex_t*>(regex_));
}

std::chrono::nanoseconds OnigRegex::search_time_limit(std::size_t text_bytes) {
  return std::chrono::seconds(2) + std::chrono::microseconds(1) * text_bytes;
}

void OnigRegex::Deadline::tick(const OnigRegex& regex) {
  if (++calls % 16 != 0 || std::chrono::steady_clock::now() <= at) return;
  const double limit_s =
      std::round(std::chrono::duration<double>(search_time_limit(text_bytes)).count() * 10) / 10;
  fail(
      regex.context_, "regex '", regex.pattern_, "' ran for more than ", limit_s, " s on ", text_bytes,
      " bytes of text (the limit is 2 s + 1 s per MiB): the pattern backtracks over long input (Hugging Face "
      "tokenizers, on the same engine, is as slow); simplify it, e.g. no unbounded repetition inside a "
      "lookahead");
}

// The leftmost match starting at or after `at`, the whole text visible to it either way. Text up to
// kSearchWholeBytes is searched by one onig_search call (fastest: it skips positions that cannot start a
// match). A longer text is tried one start position at a time so the clock is read between them: one
// onig_search cannot be interrupted, and its `range` argument would also cut off what a match may see.
// \G matches where onig_search starts (where onig_match is called, in the loop), so such a pattern is
// always searched whole.
std::optional<OnigRegex::Match> OnigRegex::next_match(std::string_view text, std::size_t at, void* region_ptr,
                                                      Deadline& deadline) const {
  constexpr std::size_t kSearchWholeBytes = 16 * 1024;  // quadratic there is at most about a second
  auto* reg = static_cast<regex_t*>(regex_);
  auto* region = static_cast<OnigRegion*>(region_ptr);
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  const auto matched = [&] {
    return Match{static_cast<std::size_t>(region->beg[0]), static_cast<std::size_t>(region->end[0])};
  };
  if (text.size() <= kSearchWholeBytes || anchored_at_start_) {
    const int r = onig_search(reg, begin, end, begin + at, end, region, ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) return std::nullopt;
    if (r < 0) fail(context_, "regex '", pattern_, "' failed: ", onig_message(r, nullptr));
    return matched();
  }
  for (std::size_t pos = at; pos <= text.size();) {
    deadline.tick(*this);
    const int r = onig_match(reg, begin, end, begin + pos, region, ONIG_OPTION_NONE);
    if (r >= 0) return matched();
    if (r != ONIG_MISMATCH) fail(context_, "regex '", pattern_, "' failed: ", onig_message(r, nullptr));
    do ++pos;  // to the next character (text is valid UTF-8)
    while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80);
  }
  return std::nullopt;
}

std::vector<std::pair<std::size_t, std::size_t>> OnigRegex::find_all(std::string_view text) const {
  std::vector<Match> out;
  std::unique_ptr<OnigRegion, void (*)(OnigRegion*)> region(onig_region_new(),
                                                            [](OnigRegion* r) { onig_region_free(r, 1); });
  Deadline deadline{std::chrono::steady_clock::now() + search_time_limit(text.size()), text.size()};
  // An empty match steps one character on (the next start), so the loop always advances.
  const auto after_char = [&](std::size_t pos) {
    char32_t cp = 0;
    const std::size_t from = pos;
    return utf8_next(text, pos, cp) ? pos : from + 1;
  };
  std::size_t at = 0;
  bool have_last = false;
  std::size_t last_end = 0;
  while (at <= text.size()) {
    const auto match = next_match(text, at, region.get(), deadline);
    if (!match) break;
    const auto [s, e] = *match;
    if (s == e && have_last && last_end == e) {  // empty, right where the previous match ended: skipped
      if (at >= text.size()) break;
      at = after_char(at);
      continue;
    }
    out.emplace_back(s, e);
    have_last = true;
    last_end = e;
    if (e != s) {
      at = e;
    } else {
      if (e >= text.size()) break;
      at = after_char(e);
    }
  }
  return out;
}

}  // namespace gtpo::data::hf
