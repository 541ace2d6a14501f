// An external reward function: a long-lived process (any language) that reads one JSON request per line on
// stdin and writes one JSON reply per line on stdout, each echoing its request's "id", so that a reply is
// matched to its request by construction: a stray or missing line is an error, never a shift (protocol in
// docs/rewards.md). Requests are sent in
// batches (all of a rollout round's completions), then every reply is read, so the process may score the
// whole batch at once. Every way it can fail (exit, silence past the timeout, a line that is not JSON, a
// missing, non-finite or wrong-typed field, a reply too many) is a RewardError that names the function, the
// request and what came back, with the tail of its stderr; the process is killed then.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rl/reward.h"
#include "runtime/error.h"

namespace gtpo::io {
class Subprocess;
}

namespace gtpo::rl {

// A reward function failed: the run must stop before it trains on anything of this step.
class RewardError : public Error {
 public:
  using Error::Error;
};

// Parses one reply line: {"id": the request's id, "reward": number, "correct": bool (optional),
// "components": {name: number} (optional), "token_rewards": [number, ...]}. Throws gtpo::Error with the
// reason (not JSON, not an object, an id other than EXPECTED_ID, missing reward, NaN/Inf or beyond
// kMaxRewardMagnitude, ...). TOKENS >= 0: the function gives token rewards and the reply must hold exactly
// TOKENS finite ones; TOKENS < 0: it does not, and a reply with token_rewards is refused (the setting says).
RewardScore parse_reward_reply(const std::string& line, int64_t expected_id, int64_t tokens = -1);

class ExternalReward {
 public:
  // Starts nothing yet: the process starts with the first batch.
  // TOKEN_REWARDS: its replies carry token_rewards (reward.functions[].token_rewards).
  ExternalReward(std::string name, std::string command, double timeout_s, bool token_rewards = false);
  ~ExternalReward();
  ExternalReward(const ExternalReward&) = delete;
  ExternalReward& operator=(const ExternalReward&) = delete;

  // Starts the process now (if not yet) and throws RewardError as score() would when it ends within
  // PROBE_S seconds: a missing script or a mistyped interpreter shows before any training work.
  void start(double probe_s);
  // One score per request, in order. Throws RewardError (see above). With token rewards each request's
  // "token_ids" says how many its reply must give.
  std::vector<RewardScore> score(const std::vector<nlohmann::json>& requests);
  const std::string& name() const { return name_; }

 private:
  [[noreturn]] void fail_with(const std::string& what, const nlohmann::json* request, const std::string& reply);

  std::string name_, command_;
  double timeout_s_;
  bool token_rewards_;
  int64_t next_id_ = 1;  // each request's "id", unique over the run, echoed by its reply
  std::unique_ptr<io::Subprocess> process_;
};

}  // namespace gtpo::rl
