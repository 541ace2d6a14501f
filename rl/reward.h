// The reward of a response as plain functions over host values, testable without a model or a process:
// the functions a reward section stands for, the built-in rewards, the weighted sum r_i, the correctness
// rule for O+/O− and the per-function metrics. The rollout phase gets the scores (built-ins here, external
// ones through rl/reward_runner.h) and hands them to combine_scores.
//
// Correctness c_i (spec, Notation): the AND of the `correct` flags the functions give (the `correct`
// built-in always gives one, an external function when its reply has "correct"); when none gives one,
// r_i >= reward.correct_threshold. A truncated response is never correct.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/verify/verdict.h"
#include "rl/run_config.h"

namespace gtpo::rl {

// The largest |reward| or |component| a reply may give, |weight| a function may have, and |r_i| a weighted
// sum may reach: beyond it a group's mean and standard deviation overflow (1e300 squared is infinite, and
// every advantage becomes 0), and no reward means anything there.
inline constexpr double kMaxRewardMagnitude = 1e12;

// One function's answer for one completion.
struct RewardScore {
  double value = 0.0;
  std::optional<bool> correct;
  std::vector<std::pair<std::string, double>> components;  // in the order the function gave them
  std::vector<double> token_rewards;  // one per completion token when the function gives them, else empty
};

// The reward of one completion.
struct RewardOutcome {
  double total = 0.0;               // r_i = Σ_f weight_f · value_f
  bool correct = false;             // c_i
  std::vector<RewardScore> scores;  // one per function, in the order of reward_functions()
  // Σ_f weight_f · token_rewards_f, one per completion token; empty when no function gives token rewards.
  // Not part of total: it enters the per-token advantage (rl/math/token_credit.h).
  std::vector<double> token_rewards;
};

// Names of the built-in rewards: correct, format, length.
const std::vector<std::string>& builtin_reward_names();
bool is_builtin_reward(const std::string& name);

// The functions SECTION stands for: its list, or the verifier alone with weight 1 when the list is empty.
std::vector<RewardFunctionConfig> reward_functions(const RewardSection& section);
// True when the section lists functions: r_i then replaces the outcome reward of grpo, dr_grpo and dapo.
inline bool has_reward_functions(const RewardSection& section) { return !section.functions.empty(); }

// Rejects a list the rollout phase cannot run, naming reward.functions[i] and the field: a missing or
// repeated name, a name that is not a built-in without a command, a built-in name with one, a name that
// cannot be a metric name ('/', spaces).
void validate_reward_section(const RewardSection& section, const std::string& where);

// A built-in reward of one completion: correct = [verdict correct] (and gives the correct flag), format =
// [well formed], length = −LENGTH / MAX_NEW_TOKENS. With TOKEN_REWARDS (only length has them), length also
// gives −1 / MAX_NEW_TOKENS per token: they sum to its value.
RewardScore builtin_reward(const std::string& name, const data::Verdict& verdict, int64_t length,
                           int64_t max_new_tokens, bool token_rewards = false);

// r_i and c_i of one completion from its functions' SCORES (same order as FUNCTIONS); |r_i| beyond
// kMaxRewardMagnitude is an error naming each function's weight and value. Also the weighted sum of their
// token rewards (every function that gives them gives one per token, checked where they are read).
RewardOutcome combine_scores(const std::vector<RewardFunctionConfig>& functions, std::vector<RewardScore> scores,
                             double correct_threshold, bool truncated);

// rewards/NAME/mean and rewards/NAME/std of every function, and rewards/NAME/COMPONENT/mean and /std of
// every component (over the outcomes that have it), population std, over OUTCOMES.
nlohmann::json reward_metrics(const std::vector<RewardFunctionConfig>& functions,
                              const std::vector<const RewardOutcome*>& outcomes);
// "rewards: correct 0.500±0.500 | mine 0.312±0.120" from those metrics, for the console.
std::string reward_summary(const std::vector<RewardFunctionConfig>& functions, const nlohmann::json& metrics);

}  // namespace gtpo::rl
