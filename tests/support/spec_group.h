// The group of the spec's test vectors (shared/spec/rl-algorithms.md, "Test vectors"; the reference's batch
// A): one prompt q, correctness 1, 1, 0, 0, 10 tokens with these entropies. Shared by the tests that check
// the vectors and those that build on them.
#pragma once
#include <optional>
#include <vector>

#include "rl/math/advantages.h"

namespace gtpo::testing {

inline std::vector<rl::Response> spec_group() {
  return {
      {"q", true, false, -1, {2.0f, 0.5f, 1.0f}, std::nullopt},
      {"q", true, false, -1, {0.5f, 1.5f}, std::nullopt},
      {"q", false, false, -1, {0.2f, 1.0f, 0.4f}, std::nullopt},
      {"q", false, false, -1, {1.0f, 0.5f}, std::nullopt},
  };
}

}  // namespace gtpo::testing
