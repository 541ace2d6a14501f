#include "rl/math/token_credit.h"

#include "runtime/error.h"

namespace gtpo::rl {

std::vector<double> token_returns(const std::vector<double>& rewards, double gamma) {
  std::vector<double> out(rewards.size());
  double later = 0.0;
  for (std::size_t t = rewards.size(); t-- > 0;) {
    later = rewards[t] + gamma * later;
    out[t] = later;
  }
  return out;
}

void add_token_credit(const std::vector<const std::vector<double>*>& token_rewards, double gamma,
                      AdvantageResult& result) {
  GTPO_CHECK(token_rewards.size() == result.responses.size(), "token rewards of ", token_rewards.size(),
             " responses for a batch of ", result.responses.size());
  for (std::size_t i = 0; i < token_rewards.size(); ++i) {
    ResponseResult& r = result.responses[i];
    if (token_rewards[i] == nullptr || token_rewards[i]->empty() || r.dropped) continue;
    const std::vector<double>& rewards = *token_rewards[i];
    GTPO_CHECK(rewards.size() == r.advantages.size(), "response ", i, ": ", rewards.size(),
               " token rewards for a response of ", r.advantages.size(), " tokens");
    const std::vector<double> credit = token_returns(rewards, gamma);
    double sum = 0.0;
    for (std::size_t t = 0; t < credit.size(); ++t) {
      r.advantages[t] = static_cast<float>(static_cast<double>(r.advantages[t]) + credit[t]);
      sum += credit[t];
    }
    if (result.sequence_level_loss)
      r.seq_advantage =
          static_cast<float>(static_cast<double>(r.seq_advantage) + sum / static_cast<double>(credit.size()));
  }
}

}  // namespace gtpo::rl
