// The host-side view of one rollout batch that the advantage math consumes and produces.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rl/math/rl_config.h"

namespace gtpo::rl {

// One sampled response. Entropies are H_{i,t} of π_old at each response position (data, never a gradient).
struct Response {
  std::string group;       // prompt key; responses with the same key form one group
  bool correct = false;    // verifier outcome
  bool truncated = false;  // hit sampler.max_new_tokens; a truncated response counts as incorrect
  int length = -1;         // |o_i| in tokens, EOS included; < 0 means entropies.size()
  std::vector<float> entropies;
  // r_i of the reward functions (rl/reward.h) when the run lists them; absent, the outcome reward is the
  // algorithm's function of correctness (c_i for grpo and dr_grpo, 2c_i − 1 for dapo).
  std::optional<double> reward;
};

// The outcome reward of grpo and dr_grpo: r_i when given, else c_i.
double outcome_reward(const Response& r);
// r_i of GTPO's α1·r_i and GRPO-S's β1·r_i when gtpo.outcome / grpo_s.outcome is reward: the response's r_i
// as the reward functions gave it, else ±1 by correctness (the paper's binary reward, which the default
// outcome always uses).
double shaping_reward(const Response& r);

// |o_i| after applying the "length defaults to the number of entropies" rule.
int response_length(const Response& r);
// c_i of the spec: the verifier said correct and the response was not truncated.
bool is_correct(const Response& r);

// Rejects a batch the math cannot use, naming the response index and position: entropies that are NaN,
// Inf or negative (beyond round-off), a length that disagrees with the entropies, missing entropies
// when the algorithm needs them. Entropies in [-kEntropyRoundoff, 0) are accepted and read as 0.
inline constexpr float kEntropyRoundoff = 1e-3f;
void validate_batch(const std::vector<Response>& batch, bool needs_entropies);
// The same checks for one response; `where` starts each message ("response 3 (group 'q')", "file.jsonl:7").
void validate_response(const Response& r, bool needs_entropies, const std::string& where);
// H_{i,t} with round-off negatives read as 0.
inline double entropy_at(const Response& r, int t) {
  const float h = r.entropies[static_cast<std::size_t>(t)];
  return h > 0.0f ? static_cast<double>(h) : 0.0;
}

struct ResponseResult {
  // Shaped reward: one per token (token-level algorithms) or exactly one value (sequence-level rewards).
  // Empty for a response of a dropped group.
  std::vector<float> shaped;
  std::vector<float> advantages;   // per token, |o_i| values (zeros for dropped groups)
  std::vector<uint8_t> loss_mask;  // per token, 1 = the token enters the policy loss
  // Per token, 1 = the token counts in the loss normaliser (rl/math/loss_aggregation.h) although the
  // algorithm took it out of the loss (dapo_forking.norm all); empty = loss_mask counts.
  std::vector<uint8_t> norm_mask;
  float seq_advantage = 0.0f;  // Â_i for sequence-level algorithms (grpo, dr_grpo, dapo*, grpo_s); 0 for gtpo
  float overlong_penalty = 0.0f;  // the penalty added to this response's reward(s), ≤ 0
  bool dropped = false;           // its group was dropped by dynamic sampling
};

struct Diagnostics {
  // d_t, h_t summed over the kept responses of the batch; index t-1 holds position t.
  std::vector<int> d_profile;
  std::vector<int> h_profile;
  std::size_t tokens = 0;              // tokens of kept responses
  std::size_t tokens_in_loss = 0;      // of those, tokens whose loss_mask is 1
  double frac_correct_negative = 0.0;  // tokens of correct responses with Ã < 0, over tokens of correct ones
  double frac_incorrect_positive =
      0.0;  // tokens of incorrect responses with Ã > 0, over tokens of incorrect ones
  // Pearson correlation between H_{i,t} and Ã_{i,t} over tokens of kept responses: all of them, only correct,
  // only incorrect. NaN where undefined (fewer than two tokens, or a constant entropy or advantage).
  double entropy_adv_corr = 0.0;
  double entropy_adv_corr_correct = 0.0;
  double entropy_adv_corr_incorrect = 0.0;
  std::size_t groups = 0;
  std::vector<std::string> dropped_groups;  // in order of first appearance
  double dropped_group_fraction = 0.0;
  std::size_t overlong_penalised = 0;  // responses with a penalty < 0
  double overlong_penalty_mean = 0.0;  // over kept responses
  double overlong_penalty_min = 0.0;
  std::size_t truncated = 0;  // kept responses that were truncated
};

struct AdvantageResult {
  std::string algo;
  bool token_level_shaping = false;       // shaped holds one value per token
  bool sequence_level_loss = false;       // the loss is over sequences (grpo_s, Eq. 10): use seq_advantage
  std::vector<ResponseResult> responses;  // same order as the input batch
  Diagnostics diagnostics;
};

}  // namespace gtpo::rl
