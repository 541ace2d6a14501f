// Algorithms by name, and the RL rows and defaults they make up.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "rl/math/algorithm.h"
#include "rl/math/losses/loss.h"

namespace gtpo::rl {

const std::vector<Algorithm>& all_algorithms();  // in registration order
std::vector<std::string> algorithm_names();
// Throws gtpo::Error listing the known names when name is unknown.
const Algorithm& find_algorithm(const std::string& name);

// The defaults of the named algorithm; throws gtpo::Error listing the known names for an unknown one.
RlConfig defaults_for(const std::string& algo);

// The policy loss a config trains with: the sequence loss for a sequence-level algorithm (gspo, grpo_s),
// else the token loss rl.policy_loss names.
const PolicyLoss& active_policy_loss(const RlConfig& cfg);

// Every RL row: the shared rl.* rows, the losses' (rl.policy_loss, clip_cov.*, kl_cov.*), then each
// algorithm's own rows in registration order. rl.algo is
// not among them (it selects the defaults the rows start from).
const std::vector<RlKey>& rl_keys();
// Nullptr when there is no such row.
const RlKey* find_rl_key(const std::string& dotted);

// Sets one option by its dotted key ("gtpo.alpha1", "rl.overlong", ...). Throws gtpo::Error
// "KEY: expected TYPE, got 'VALUE'"; an unknown key's error lists the valid keys.
void set_rl_option(RlConfig& cfg, const std::string& key, const std::string& value);
// (key, current value as set_rl_option would accept it) for every row: the resolved config.
std::vector<std::pair<std::string, std::string>> rl_option_values(const RlConfig& cfg);

}  // namespace gtpo::rl
