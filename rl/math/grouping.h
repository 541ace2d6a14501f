// Responses grouped by prompt key, in the order the keys first appear (deterministic).
#pragma once
#include <string>
#include <vector>

#include "rl/math/rollout.h"

namespace gtpo::rl {

struct Grouping {
  std::vector<std::string> ids;           // group keys, first-appearance order
  std::vector<std::vector<int>> members;  // response indices of each group, input order
};

Grouping group_responses(const std::vector<Response>& batch);

}  // namespace gtpo::rl
