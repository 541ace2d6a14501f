// Self-contained deterministic randomness for task generation: splitmix64 plus rejection sampling.
// std::uniform_int_distribution is not used because its output differs between standard libraries,
// and generated datasets must be identical everywhere.
#pragma once
#include <cstdint>
#include <string_view>

#include "runtime/random.h"

namespace gtpo::data {

// Combines values into one hash; order matters.
inline uint64_t hash_combine(uint64_t h, uint64_t v) { return mix64(h ^ mix64(v)); }

// FNV-1a over the bytes, then mixed: a stable hash of a string (not std::hash, which varies).
inline uint64_t hash_string(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ULL;
  }
  return mix64(h);
}

// A counter-based stream: the i-th output is mix64(seed + i * golden), like splitmix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() { return splitmix64_next(state_); }

  // Uniform in [0, n) for n > 0, without modulo bias (rejects the incomplete top bucket).
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = next();
    } while (x >= limit);
    return x % n;
  }

  // Uniform in [lo, hi], inclusive; requires lo <= hi.
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }

  // Uniform in [0, 1) with 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace gtpo::data
