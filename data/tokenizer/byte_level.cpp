#include "data/tokenizer/byte_level.h"

#include <array>
#include <cstdint>

#include "data/tokenizer/utf8.h"

namespace gtpo::data {
namespace {

struct ByteLevelTables {
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, 324> to_byte{};  // every image is below U+0100 + 68

  ByteLevelTables() {
    to_byte.fill(-1);
    auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE); };
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      to_unicode[b] = printable(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      to_byte[to_unicode[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevelTables& tables() {
  static const ByteLevelTables t;
  return t;
}

}  // namespace

std::string bytes_to_byte_level(std::string_view bytes) {
  const auto& t = tables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(out, t.to_unicode[static_cast<uint8_t>(c)]);
  return out;
}

bool byte_level_to_bytes(std::string_view text, std::string& bytes) {
  const auto& t = tables();
  bytes.clear();
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp = 0;
    if (!utf8_next(text, pos, cp)) return false;
    if (cp >= t.to_byte.size() || t.to_byte[cp] < 0) return false;
    bytes += static_cast<char>(t.to_byte[cp]);
  }
  return true;
}

}  // namespace gtpo::data
