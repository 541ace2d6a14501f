// DAPO dynamic sampling: a group whose responses all have the same correctness carries no outcome signal and
// is dropped; the trainer then samples more prompts (up to rl.max_resample_rounds) to refill the step.
#pragma once
#include <vector>

#include "rl/math/grouping.h"
#include "rl/math/rollout.h"

namespace gtpo::rl {

// True when the group has at least one correct and one incorrect response (a group of one never does).
bool group_is_informative(const std::vector<Response>& batch, const std::vector<int>& members);

// keep[g] for every group of the grouping.
std::vector<bool> dynamic_sampling_keep(const std::vector<Response>& batch, const Grouping& groups);

}  // namespace gtpo::rl
