// A compiled Oniguruma regular expression (the engine Hugging Face `tokenizers` itself uses for Split,
// Replace and ByteLevel), UTF-8, Ruby syntax: \p{L}, (?i:...), lookahead (?!\S) all work as in
// tokenizer.json files. Safe to search from several threads at once.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gtpo::data::hf {

class OnigRegex {
 public:
  // A bad pattern is a gtpo::Error starting with `context` and giving Oniguruma's message.
  OnigRegex(const std::string& pattern, const std::string& context);
  ~OnigRegex();
  OnigRegex(const OnigRegex&) = delete;
  OnigRegex& operator=(const OnigRegex&) = delete;

  // Non-overlapping matches as (start, end) byte offsets, left to right, as Rust onig's find_iter gives
  // them (an empty match right after the previous match is skipped). `text` must be valid UTF-8.
  // A backtracking pattern can take minutes on long text (`a(?=.*b)` is quadratic in its length), so a
  // search over more than 16 KiB that runs longer than search_time_limit(text.size()) is a gtpo::Error
  // naming the pattern. One match attempt is bounded by Oniguruma's retry limit, not by the clock.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

  // 2 s plus 1 s per MiB: ten times what the slowest real tokenizer pattern needs, far below a hang.
  static std::chrono::nanoseconds search_time_limit(std::size_t text_bytes);

 private:
  using Match = std::pair<std::size_t, std::size_t>;
  // The end of a find_all's time: tick() reads the clock every 16th call and fails past `at`.
  struct Deadline {
    std::chrono::steady_clock::time_point at;
    std::size_t text_bytes = 0;
    unsigned calls = 0;
    void tick(const OnigRegex& regex);
  };
  std::optional<Match> next_match(std::string_view text, std::size_t at, void* region,
                                  Deadline& deadline) const;

  void* regex_ = nullptr;  // regex_t*, kept opaque so oniguruma.h stays out of other headers
  std::string pattern_;
  std::string context_;
  bool anchored_at_start_ = false;  // has \G: searched whole, never position by position
};

}  // namespace gtpo::data::hf
