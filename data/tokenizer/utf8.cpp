#include "data/tokenizer/utf8.h"

#include <cstdint>
#include <cstdio>

namespace gtpo::data {

bool utf8_next(std::string_view s, std::size_t& pos, char32_t& cp) {
  if (pos >= s.size()) return false;
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) {
    cp = b0;
    pos += 1;
    return true;
  }
  int len = 0;
  char32_t value = 0;
  char32_t min_value = 0;  // smallest code point allowed for this length: rejects overlong forms
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, value = b0 & 0x1F, min_value = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, value = b0 & 0x0F, min_value = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, value = b0 & 0x07, min_value = 0x10000;
  } else {
    return false;  // continuation byte or 0xF8..0xFF as a lead byte
  }
  if (pos + len > s.size()) return false;
  for (int i = 1; i < len; ++i) {
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return false;
    value = (value << 6) | (b & 0x3F);
  }
  if (value < min_value || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return false;
  cp = value;
  pos += len;
  return true;
}

bool utf8_valid(std::string_view s) {
  std::size_t pos = 0;
  char32_t cp = 0;
  while (pos < s.size()) {
    if (!utf8_next(s, pos, cp)) return false;
  }
  return true;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// The length (>= 1) of the invalid sequence at s[pos]: the lead byte and the continuation bytes that could
// still have completed it (Unicode's "maximal subpart"). Called where utf8_next failed.
std::size_t invalid_subpart(std::string_view s, std::size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range rules out overlong forms, surrogates, > U+10FFFF
  int len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 1;
  }
  std::size_t n = 1;
  for (int i = 1; i < len && pos + n < s.size(); ++i, ++n) {
    const auto b = static_cast<uint8_t>(s[pos + n]);
    if (b < lo || b > hi) break;
    lo = 0x80, hi = 0xBF;
  }
  return n;
}

}  // namespace

std::string utf8_replace_invalid(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t start = pos;
    char32_t cp = 0;
    if (utf8_next(bytes, pos, cp)) {
      out.append(bytes.substr(start, pos - start));
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      pos += invalid_subpart(bytes, pos);
    }
  }
  return out;
}

std::string escape_for_log(std::string_view bytes) {
  std::string out;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t start = pos;
    char32_t cp = 0;
    if (!utf8_next(bytes, pos, cp)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(static_cast<uint8_t>(bytes[pos])));
      out += buf;
      pos += 1;
      continue;
    }
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\\') {
      out += "\\\\";
    } else if (cp < 0x20 || cp == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(bytes.substr(start, pos - start));
    }
  }
  return out;
}

std::string code_point_name(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

}  // namespace gtpo::data
