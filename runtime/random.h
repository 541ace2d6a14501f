// Counter-based random numbers: a value is a pure function of (seed, counters), so a draw never depends
// on how many draws happened before it, on the batch around it, or on the thread that makes it.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace gtpo {

// SplitMix64's finalisation step: a strong, bijective 64-bit mixer. The one copy in the project (data/ and
// the paper's math in rl/math/ include this header too; it needs nothing but the standard library).
inline uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The next output of the SplitMix64 stream whose state is STATE (advanced by one).
inline uint64_t splitmix64_next(uint64_t& state) {
  const uint64_t out = mix64(state);
  state += 0x9E3779B97F4A7C15ull;
  return out;
}

// Combines counters into one 64-bit value; the order of counters matters.
inline uint64_t counter_hash(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = mix64(seed ^ 0x5851F42D4C957F2Dull);
  h = mix64(h ^ a);
  h = mix64(h ^ (b + 0x165667B19E3779F9ull));
  h = mix64(h ^ (c + 0x27D4EB2F165667C5ull));
  return mix64(h ^ (d + 0x85EBCA77C2B2AE63ull));
}

// FNV-1a, to key a stream by a name such as a parameter's.
inline uint64_t name_hash(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

// Uniform double in [0, 1) with 53 random bits.
inline double counter_uniform(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  return static_cast<double>(counter_hash(seed, a, b, c, d) >> 11) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller from two independent counter draws.
inline double counter_normal(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  const double u1 = 1.0 - counter_uniform(seed, a, b, c, 0);  // (0, 1]: log is finite
  const double u2 = counter_uniform(seed, a, b, c, 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace gtpo
