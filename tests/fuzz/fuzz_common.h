// The contract every harness checks: any input either works or ends in a gtpo::Error (a clean message the
// CLI prints with exit 1). Any other exception is a failure, reported as a crash with its message; crashes,
// sanitizer reports, leaks and timeouts are failures through libFuzzer itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "runtime/error.h"

namespace gtpo::fuzz {

template <typename Body>
int run_one(Body&& body) {
  try {
    body();
  } catch (const gtpo::Error&) {
    // A clean, named error: what bad input should give.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not a gtpo::Error: %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a non-std exception escaped\n");
    std::abort();
  }
  return 0;
}

// The input split at every occurrence of SEP (a harness's inputs with several parts).
inline std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

}  // namespace gtpo::fuzz
