// Text as Python's str sees it: code points (len, indexing, slicing, reversing and iterating a string count
// code points, not bytes) and Python's idea of whitespace (str.strip(), split() and jinja's `-` markers).
// Case mapping (upper/lower/title) changes ASCII letters only: a documented limitation.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gtpo::data::chat {

// The work of the render in progress on this thread, counted in its steps (RenderLimits::max_steps): every
// operation whose cost grows with its operands (substring search, code point scans, comparisons, slices,
// concatenation, list membership) charges the bytes or items it touches, so no template can make a render
// run unbounded. A render installs one for its length; outside a render charging does nothing.
class WorkMeter {
 public:
  WorkMeter(uint64_t& steps, uint64_t max_steps);
  ~WorkMeter();
  WorkMeter(const WorkMeter&) = delete;
  WorkMeter& operator=(const WorkMeter&) = delete;
  // Adds N steps to the current render's count; past its limit, a ValueError.
  static void charge(uint64_t n);

 private:
  uint64_t& steps_;
  uint64_t max_steps_;
  WorkMeter* previous_;
};

// TEXT.find(NEEDLE, FROM) in time linear in the bytes searched (Knuth-Morris-Pratt; std::string::find can
// take |text| x |needle| steps), charged to the work meter.
std::size_t find_text(std::string_view text, std::string_view needle, std::size_t from = 0);

// The string cut into UTF-8 code point sequences (invalid bytes become one piece each).
std::vector<std::string> code_points(std::string_view text);
std::size_t code_point_count(std::string_view text);

// Length in bytes of the whitespace code point at TEXT[pos] (Python's str.isspace), or 0.
std::size_t space_at(std::string_view text, std::size_t pos);
// Length in bytes of the whitespace code point ending at TEXT[end-1], or 0.
std::size_t space_before(std::string_view text, std::size_t end);

std::string strip_left(std::string_view text);
std::string strip_right(std::string_view text);
// str.strip(chars): removes any of the code points of CHARS from the ends.
std::string strip_chars(std::string_view text, std::string_view chars, bool left, bool right);

std::string ascii_upper(std::string_view text);
std::string ascii_lower(std::string_view text);

// str.split() (runs of whitespace, no empty pieces) and str.split(sep) with maxsplit (-1 = all).
std::vector<std::string> split_whitespace(std::string_view text, long maxsplit);
std::vector<std::string> split_on(std::string_view text, std::string_view sep, long maxsplit);
// str.replace(old, new, count) (-1 = all); an empty OLD inserts NEW between code points, as Python does.
std::string replace_all(std::string_view text, std::string_view old_text, std::string_view new_text, long count);
// str.splitlines() (without the line ends).
std::vector<std::string> split_lines(std::string_view text);

}  // namespace gtpo::data::chat
