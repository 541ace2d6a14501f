// A compiled Oniguruma regular expression (the engine Hugging Face `tokenizers` itself uses for Split,
// Replace and ByteLevel), UTF-8, Ruby syntax: \p{L}, (?i:...), lookahead (?!\S) all work as in
// tokenizer.json files. Safe to search from several threads at once.
#pragma once
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
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view text) const;

 private:
  void* regex_ = nullptr;  // regex_t*, kept opaque so oniguruma.h stays out of other headers
};

}  // namespace gtpo::data::hf
