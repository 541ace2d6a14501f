#include "data/tokenizer/pretokenizer.h"

#include <cstdint>

namespace gtpo::data {
namespace {

enum class Cls { kLetter, kDigit, kSpace, kOther };

Cls classify(char c) {
  const auto b = static_cast<uint8_t>(c);
  if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b >= 0x80) return Cls::kLetter;
  if (b >= '0' && b <= '9') return Cls::kDigit;
  if (b == ' ' || (b >= '\t' && b <= '\r')) return Cls::kSpace;
  return Cls::kOther;
}

// Length of a contraction ('s 't 're 've 'm 'll 'd, case-sensitive as in GPT-2) at text[i], or 0.
std::size_t contraction(std::string_view text, std::size_t i) {
  if (text[i] != '\'' || i + 1 >= text.size()) return 0;
  const char a = text[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < text.size()) {
    const char b = text[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

std::size_t run_end(std::string_view text, std::size_t i, Cls cls) {
  while (i < text.size() && classify(text[i]) == cls) ++i;
  return i;
}

}  // namespace

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    std::size_t end = i;
    if (std::size_t c = contraction(text, i)) {
      end = i + c;
    } else if (Cls cls = classify(text[i]); cls != Cls::kSpace) {
      end = run_end(text, i, cls);  // \p{L}+, \p{N}+ or [^\s\p{L}\p{N}]+ without the optional space
    } else if (text[i] == ' ' && i + 1 < n && classify(text[i + 1]) != Cls::kSpace) {
      end = run_end(text, i + 1, classify(text[i + 1]));  // " ?X+" with the space
    } else {
      // \s+(?!\S): a whitespace run stops one short of a following non-space, leaving that last whitespace
      // character to lead the next chunk (or, when it is alone, \s+ takes it by itself).
      const std::size_t ws_end = run_end(text, i, Cls::kSpace);
      end = (ws_end < n && ws_end - i > 1) ? ws_end - 1 : ws_end;
    }
    out.push_back(text.substr(i, end - i));
    i = end;
  }
  return out;
}

}  // namespace gtpo::data
