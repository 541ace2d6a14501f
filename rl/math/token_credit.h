// Dense credit from token rewards (docs/algorithms.md, "Token rewards"): a reward function's per-token
// rewards, times its weight, enter each token's advantage after the algorithm has normalised its own, the
// same way for every algorithm, so that GTPO's entropy shaping and a user's dense signal compose:
//   Ã'_{i,t} = Ã_{i,t} + Σ_{k=t}^{|o_i|} γ^{k−t} · ρ_{i,k},   ρ_{i,k} = Σ_f weight_f · ρ_{f,i,k}
// (γ = reward.token_gamma; 1 = the plain sum from t on, 0 = the token's own reward). A sequence-level loss
// (grpo_s, gspo) has one advantage per response: Â'_i = Â_i + mean_t of the same credit.
#pragma once
#include <vector>

#include "rl/math/rollout.h"

namespace gtpo::rl {

// The discounted return-to-go of REWARDS: out[t] = Σ_{k≥t} γ^{k−t} rewards[k], summed from the end.
std::vector<double> token_returns(const std::vector<double>& rewards, double gamma);

// Adds the credit of every kept response's token rewards (TOKEN_REWARDS[i], one per result response; nullptr
// or empty for none) to its advantages (and, for a sequence-level loss, to seq_advantage). Responses
// without token rewards and dropped responses are left as they are. Throws gtpo::Error when TOKEN_REWARDS
// has another size than the batch or a response has token rewards of another length than |o_i|.
void add_token_credit(const std::vector<const std::vector<double>*>& token_rewards, double gamma,
                      AdvantageResult& result);

}  // namespace gtpo::rl
