// Rewards → shaped rewards → advantages for one rollout batch: the entry point of the RL math.
#pragma once
#include <vector>

#include "rl/math/grouping.h"
#include "rl/math/rl_config.h"
#include "rl/math/rollout.h"

namespace gtpo::rl {

// Runs cfg.algo over the batch: validation, grouping, dynamic sampling (rl.dynamic_sampling), overlong
// penalties (rl.overlong), the algorithm, loss masks (rl.mask_truncated, dapo_forking), the token rewards'
// credit (rl/math/token_credit.h) and diagnostics.
// Responses of dropped groups get zero advantages, an all-zero loss mask and no shaped reward.
// Throws gtpo::Error for unusable input (see validate_batch) or configuration.
// What the batch's producer knows beyond the responses themselves.
struct BatchContext {
  int max_new_tokens = 0;            // L_max (sampler.max_new_tokens); 0 = unknown (dapo_soft then fails)
  const Grouping* groups = nullptr;  // the groups, when known by construction; nullptr = by Response::group
  bool groups_filtered = false;      // dynamic sampling already dropped the uninformative groups
  // Per response (input order), Σ_f weight_f · ρ_{f,t} of the reward functions that give token rewards, or
  // nullptr / an empty vector for none; empty = no token rewards at all (rl/math/token_credit.h).
  std::vector<const std::vector<double>*> token_rewards;
  double token_gamma = 1.0;  // reward.token_gamma: discount of the token rewards' return-to-go
  uint64_t seed = 0;         // of the step: dapo_forking.select random draws its tokens from it
};
AdvantageResult compute_advantages(const std::vector<Response>& batch, const RlConfig& cfg,
                                   const BatchContext& context = {});

}  // namespace gtpo::rl
