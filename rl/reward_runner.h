// The reward functions of a run, alive for the whole run: the built-ins are computed here and each external
// function keeps its process (rl/external_reward.h) from the first step to the end, so a process can load
// a model or a cache once. The rollout phase calls score() once per rollout round with every completion of
// the round; each external function gets them as one batch.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizer/tokenizer.h"
#include "rl/external_reward.h"
#include "rl/reward.h"
#include "rl/run_config.h"

namespace gtpo::rl {

struct RolloutItem;  // rl/rollout_phase.h

class RewardRunner {
 public:
  // SAMPLER gives L_max for the length reward. No process starts before start_processes() or score().
  RewardRunner(const RewardSection& section, const SamplerSection& sampler);
  ~RewardRunner();
  RewardRunner(const RewardRunner&) = delete;
  RewardRunner& operator=(const RewardRunner&) = delete;

  // Fills every item's reward (RolloutItem::reward) from its verdict, tokens and the external functions'
  // replies (TOKENIZER renders the requests' token_texts). Throws RewardError when an external function
  // fails; then no item of the round has a reward.
  void score(std::vector<RolloutItem*>& items, int64_t step, const data::Tokenizer& tokenizer);
  // Starts every external function's process, each given PROBE_S seconds to fail (ExternalReward::start).
  void start_processes(double probe_s);

  const std::vector<RewardFunctionConfig>& functions() const { return functions_; }
  // The section lists functions: r_i is the continuous reward, not the verifier's 0/1.
  bool continuous() const { return continuous_; }

 private:
  std::vector<RewardFunctionConfig> functions_;
  bool continuous_;
  double correct_threshold_;
  int64_t max_new_tokens_;
  std::vector<std::unique_ptr<ExternalReward>> external_;  // per function; null for built-ins
};

// The request an external function gets for ITEM, number INDEX of a batch of BATCH_SIZE (docs/rewards.md):
// function, step, group, index, batch_size, prompt, completion (invalid UTF-8 replaced by U+FFFD),
// completion_tokens and token_ids (the same exact ids), TOKEN_TEXTS (each id decoded alone, as token_texts()),
// truncated, and the dataset row's columns under "row".
nlohmann::json reward_request(const std::string& function, const RolloutItem& item, int64_t step,
                              std::size_t index, std::size_t batch_size, const nlohmann::json& token_texts);
// Every completion token decoded on its own, printable (Tokenizer::token_text: a byte that is not a whole
// UTF-8 character alone, a piece of a multi-byte one, shows as \xNN; control characters as \n, \t, ...).
nlohmann::json token_texts(const data::Tokenizer& tokenizer, const std::vector<int32_t>& ids);

}  // namespace gtpo::rl
