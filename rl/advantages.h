// Rewards → shaped rewards → advantages for one rollout batch: the entry point of the RL math.
#pragma once
#include <vector>

#include "rl/rl_config.h"
#include "rl/rollout.h"

namespace gtpo::rl {

// Runs cfg.algo over the batch: validation, grouping, dynamic sampling (rl.dynamic_sampling), overlong
// penalties (rl.overlong), the algorithm, loss masks (rl.mask_truncated, dapo_forking) and diagnostics.
// Responses of dropped groups get zero advantages, an all-zero loss mask and no shaped reward.
// Throws gtpo::Error for unusable input (see validate_batch) or configuration.
AdvantageResult compute_advantages(const std::vector<Response>& batch, const RlConfig& cfg);

}  // namespace gtpo::rl
