#include "data/chat/text_utils.h"

#include <vector>

#include "data/chat/template_error.h"

namespace gtpo::data::chat {

namespace {

thread_local WorkMeter* current_meter = nullptr;

std::size_t sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

// Length of the code point at POS, never past the end and never over a non-continuation byte.
std::size_t piece_length(std::string_view text, std::size_t pos) {
  const std::size_t want = sequence_length(static_cast<unsigned char>(text[pos]));
  std::size_t n = 1;
  while (n < want && pos + n < text.size() && (static_cast<unsigned char>(text[pos + n]) & 0xC0) == 0x80) ++n;
  return n == want ? n : 1;
}

}  // namespace

WorkMeter::WorkMeter(uint64_t& steps, uint64_t max_steps)
    : steps_(steps), max_steps_(max_steps), previous_(current_meter) {
  current_meter = this;
}

WorkMeter::~WorkMeter() { current_meter = previous_; }

void WorkMeter::charge(uint64_t n) {
  WorkMeter* m = current_meter;
  if (m == nullptr) return;
  m->steps_ += n;
  if (m->steps_ > m->max_steps_)
    value_error(
        "the template ran more than ", m->max_steps_,
        " steps, its limit (RenderLimits::max_steps; string and list operations count a step per byte or "
        "item they touch)");
}

std::size_t find_text(std::string_view text, std::string_view needle, std::size_t from) {
  if (from > text.size()) return std::string_view::npos;
  WorkMeter::charge(text.size() - from + needle.size());
  if (needle.empty()) return from;
  std::vector<std::size_t> border(needle.size(), 0);  // border[i]: longest proper border of needle[0..i]
  for (std::size_t i = 1, k = 0; i < needle.size(); ++i) {
    while (k > 0 && needle[i] != needle[k]) k = border[k - 1];
    if (needle[i] == needle[k]) ++k;
    border[i] = k;
  }
  for (std::size_t i = from, k = 0; i < text.size(); ++i) {
    while (k > 0 && text[i] != needle[k]) k = border[k - 1];
    if (text[i] == needle[k]) ++k;
    if (k == needle.size()) return i + 1 - k;
  }
  return std::string_view::npos;
}

namespace {

// The UTF-8 encodings of the non-ASCII code points Python's str.isspace accepts.
constexpr std::string_view kWideSpaces[] = {
    "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x81", "\xE2\x80\x82",
    "\xE2\x80\x83", "\xE2\x80\x84", "\xE2\x80\x85", "\xE2\x80\x86", "\xE2\x80\x87", "\xE2\x80\x88",
    "\xE2\x80\x89", "\xE2\x80\x8A", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F",
    "\xE3\x80\x80"};

bool ascii_space(unsigned char c) { return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20); }

}  // namespace

std::vector<std::string> code_points(std::string_view text) {
  WorkMeter::charge(text.size());
  std::vector<std::string> out;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t n = piece_length(text, pos);
    out.emplace_back(text.substr(pos, n));
    pos += n;
  }
  return out;
}

std::size_t code_point_count(std::string_view text) {
  WorkMeter::charge(text.size());
  std::size_t count = 0;
  for (std::size_t pos = 0; pos < text.size(); pos += piece_length(text, pos)) ++count;
  return count;
}

std::size_t space_at(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return 0;
  if (ascii_space(static_cast<unsigned char>(text[pos]))) return 1;
  for (std::string_view w : kWideSpaces)
    if (text.substr(pos, w.size()) == w) return w.size();
  return 0;
}

std::size_t space_before(std::string_view text, std::size_t end) {
  if (end == 0) return 0;
  if (ascii_space(static_cast<unsigned char>(text[end - 1]))) return 1;
  for (std::string_view w : kWideSpaces)
    if (end >= w.size() && text.substr(end - w.size(), w.size()) == w) return w.size();
  return 0;
}

std::string strip_left(std::string_view text) {
  std::size_t pos = 0;
  while (std::size_t n = space_at(text, pos)) pos += n;
  return std::string(text.substr(pos));
}

std::string strip_right(std::string_view text) {
  std::size_t end = text.size();
  while (std::size_t n = space_before(text, end)) end -= n;
  return std::string(text.substr(0, end));
}

std::string strip_chars(std::string_view text, std::string_view chars, bool left, bool right) {
  const std::vector<std::string> set = code_points(chars);
  const std::vector<std::string> pieces = code_points(text);
  const auto in_set = [&](const std::string& p) {
    for (const std::string& s : set)
      if (s == p) return true;
    return false;
  };
  std::size_t first = 0, last = pieces.size();
  if (left)
    while (first < last && in_set(pieces[first])) ++first;
  if (right)
    while (last > first && in_set(pieces[last - 1])) --last;
  std::string out;
  for (std::size_t i = first; i < last; ++i) out += pieces[i];
  return out;
}

std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::vector<std::string> split_whitespace(std::string_view text, long maxsplit) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (true) {
    while (std::size_t n = space_at(text, pos)) pos += n;
    if (pos >= text.size()) break;
    if (maxsplit >= 0 && static_cast<long>(out.size()) == maxsplit) {
      out.push_back(strip_right(text.substr(pos)));
      break;
    }
    std::size_t end = pos;
    while (end < text.size() && space_at(text, end) == 0) end += piece_length(text, end);
    out.emplace_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::vector<std::string> split_on(std::string_view text, std::string_view sep, long maxsplit) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (maxsplit < 0 || static_cast<long>(out.size()) < maxsplit) {
    const std::size_t at = find_text(text, sep, pos);
    if (at == std::string_view::npos) break;
    out.emplace_back(text.substr(pos, at - pos));
    pos = at + sep.size();
  }
  out.emplace_back(text.substr(pos));
  return out;
}

std::string replace_all(std::string_view text, std::string_view old_text, std::string_view new_text, long count) {
  std::string out;
  long done = 0;
  if (old_text.empty()) {
    const std::vector<std::string> pieces = code_points(text);
    for (const std::string& p : pieces) {
      if (count < 0 || done < count) {
        WorkMeter::charge(new_text.size());
        out += new_text;
        ++done;
      }
      out += p;
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  std::size_t pos = 0;
  while (count < 0 || done < count) {
    const std::size_t at = find_text(text, old_text, pos);
    if (at == std::string_view::npos) break;
    WorkMeter::charge(new_text.size());  // the output grows by it: a 1 MB NEW a million times stops early
    out += text.substr(pos, at - pos);
    out += new_text;
    pos = at + old_text.size();
    ++done;
  }
  out += text.substr(pos);
  return out;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0, pos = 0;
  while (pos < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[pos]);
    std::size_t end_len = 0;
    if (c == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') end_len = 2;
    else if (c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || (c >= 0x1C && c <= 0x1E)) end_len = 1;
    else if (text.substr(pos, 2) == "\xC2\x85") end_len = 2;
    else if (text.substr(pos, 3) == "\xE2\x80\xA8" || text.substr(pos, 3) == "\xE2\x80\xA9") end_len = 3;
    if (end_len) {
      out.emplace_back(text.substr(start, pos - start));
      pos += end_len;
      start = pos;
    } else {
      pos += piece_length(text, pos);
    }
  }
  if (start < text.size()) out.emplace_back(text.substr(start));
  return out;
}

}  // namespace gtpo::data::chat
