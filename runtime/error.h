// Errors: every failure the user can cause is a gtpo::Error with a message that names what was wrong.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace gtpo {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
inline void append_all(std::ostringstream&) {}
template <typename T, typename... Rest>
void append_all(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append_all(os, rest...);
}
}  // namespace detail

// Builds a message from streamable parts: fail("matmul: ", shape_a, " vs ", shape_b).
template <typename... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append_all(os, parts...);
  throw Error(os.str());
}

}  // namespace gtpo

// GTPO_CHECK(cond, parts...) throws gtpo::Error built from parts when cond is false.
#define GTPO_CHECK(cond, ...)            \
  do {                                   \
    if (!(cond)) ::gtpo::fail(__VA_ARGS__); \
  } while (0)
