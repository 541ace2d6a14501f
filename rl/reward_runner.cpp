#include "rl/reward_runner.h"

#include "data/dataset.h"
#include "data/tokenizer/utf8.h"
#include "rl/rollout_phase.h"

namespace gtpo::rl {

RewardRunner::RewardRunner(const RewardSection& section, const SamplerSection& sampler)
    : functions_(reward_functions(section)),
      continuous_(has_reward_functions(section)),
      correct_threshold_(section.correct_threshold),
      max_new_tokens_(sampler.max_new_tokens) {
  validate_reward_section(section, "reward");
  for (const RewardFunctionConfig& f : functions_)
    external_.push_back(f.command.empty() ? nullptr
                                          : std::make_unique<ExternalReward>(
                                                f.name, f.command, section.timeout_s, f.token_rewards));
}

RewardRunner::~RewardRunner() = default;

void RewardRunner::start_processes(double probe_s) {
  for (const std::unique_ptr<ExternalReward>& e : external_)
    if (e) e->start(probe_s);
}

nlohmann::json token_texts(const data::Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  nlohmann::json texts = nlohmann::json::array();
  for (int32_t id : ids) texts.push_back(tokenizer.token_text(id));
  return texts;
}

nlohmann::json reward_request(const std::string& function, const RolloutItem& item, int64_t step,
                              std::size_t index, std::size_t batch_size, const nlohmann::json& texts) {
  const data::Problem& p = item.problem;
  return {{"function", function},
          {"step", step},
          {"group", item.problem_index},
          {"index", index},
          {"batch_size", batch_size},
          // A byte-level model can sample bytes that are not UTF-8: the texts replace them (JSON carries only
          // UTF-8), token_ids carries the exact ids.
          {"prompt", data::utf8_replace_invalid(p.prompt)},
          {"completion", data::utf8_replace_invalid(item.completion)},
          {"completion_tokens", item.sample.tokens},
          {"token_ids", item.sample.tokens},
          {"token_texts", texts},
          {"truncated", item.truncated},
          {"row", p.row.empty() ? data::problem_to_json(p) : nlohmann::json::parse(p.row)}};
}

void RewardRunner::score(std::vector<RolloutItem*>& items, int64_t step, const data::Tokenizer& tokenizer) {
  std::vector<std::vector<RewardScore>> by_item(items.size(), std::vector<RewardScore>(functions_.size()));
  std::vector<nlohmann::json> texts;  // rendered once per round, for the external functions only
  for (std::size_t f = 0; f < functions_.size(); ++f) {
    if (external_[f]) {
      if (texts.empty())
        for (const RolloutItem* it : items) texts.push_back(token_texts(tokenizer, it->sample.tokens));
      std::vector<nlohmann::json> requests;
      requests.reserve(items.size());
      for (std::size_t i = 0; i < items.size(); ++i)
        requests.push_back(reward_request(functions_[f].name, *items[i], step, i, items.size(), texts[i]));
      std::vector<RewardScore> scores = external_[f]->score(requests);
      for (std::size_t i = 0; i < items.size(); ++i) by_item[i][f] = std::move(scores[i]);
    } else {
      for (std::size_t i = 0; i < items.size(); ++i)
        by_item[i][f] = builtin_reward(functions_[f].name, items[i]->verdict,
                                       static_cast<int64_t>(items[i]->sample.tokens.size()), max_new_tokens_,
                                       functions_[f].token_rewards);
    }
  }
  // Only once every function has answered for every item does any item get a reward.
  for (std::size_t i = 0; i < items.size(); ++i)
    items[i]->reward = combine_scores(functions_, std::move(by_item[i]), correct_threshold_, items[i]->truncated);
}

}  // namespace gtpo::rl
