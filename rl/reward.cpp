#include "rl/reward.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "rl/run_config_schema.h"
#include "runtime/error.h"

namespace gtpo::rl {

// The reward section: read by the rollout phase through reward_functions() and RewardRunner.
std::vector<RunKey> schema::reward_keys() {
  using config::field;
  using config::item_field;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<RunKey> k = {
      field("reward", "correct_threshold", &RunConfig::reward, &RewardSection::correct_threshold,
            config::number(),
            "c_i = r_i >= this when no reward function gives a correct flag (O+/O- of gtpo and grpo_s, "
            "dynamic sampling, accuracy)"),
      field("reward", "timeout_s", &RunConfig::reward, &RewardSection::timeout_s,
            config::number(0, inf, true),
            "longest wait in seconds for one reply line of an external reward; past it the run stops"),
      field("reward", "token_gamma", &RunConfig::reward, &RewardSection::token_gamma, config::number(0, 1),
            "discount of the token rewards' return-to-go added to each token's advantage (1 = plain sum of "
            "the rewards from the token on; 0 = each token's own reward); no effect without token rewards"),
      item_field(
          "reward", "functions", "name", &RunConfig::reward, &RewardSection::functions,
          &RewardFunctionConfig::name, config::text(),
          "the function's name (metrics rewards/NAME/...); without a command: correct, format or length"),
      item_field("reward", "functions", "weight", &RunConfig::reward, &RewardSection::functions,
                 &RewardFunctionConfig::weight, config::number(-kMaxRewardMagnitude, kMaxRewardMagnitude),
                 "its weight in r_i = Σ weight·value (0: logged only; |r_i| <= 1e12)"),
      item_field("reward", "functions", "command", &RunConfig::reward, &RewardSection::functions,
                 &RewardFunctionConfig::command, config::text(),
                 "shell command of an external reward (JSON lines on stdin/stdout, docs/rewards.md); "
                 "empty = a built-in"),
      item_field("reward", "functions", "token_rewards", &RunConfig::reward, &RewardSection::functions,
                 &RewardFunctionConfig::token_rewards, config::boolean(),
                 "it gives one reward per completion token (an external reply's token_rewards; the length "
                 "built-in); they enter every token's advantage (docs/algorithms.md)"),
  };
  k[3].default_doc = "required";
  k[4].default_doc = "1";
  k[5].default_doc = "\"\"";
  k[6].default_doc = "false";
  return k;
}

const std::vector<std::string>& builtin_reward_names() {
  static const std::vector<std::string> names = {"correct", "format", "length"};
  return names;
}

bool is_builtin_reward(const std::string& name) {
  const auto& names = builtin_reward_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::vector<RewardFunctionConfig> reward_functions(const RewardSection& section) {
  if (section.functions.empty()) return {{"correct", 1.0, "", false}};
  return section.functions;
}

void validate_reward_section(const RewardSection& section, const std::string& where) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < section.functions.size(); ++i) {
    const RewardFunctionConfig& f = section.functions[i];
    const std::string at = where + ": reward.functions[" + std::to_string(i) + "]";
    GTPO_CHECK(!f.name.empty(), at, ".name is required (a built-in: ", config::join(builtin_reward_names()),
               "; or any name with a command)");
    GTPO_CHECK(f.name.find_first_of("/ \t\n") == std::string::npos, at, ".name '", f.name,
               "' must not hold '/' or spaces (it names the metrics rewards/NAME/mean)");
    GTPO_CHECK(seen.insert(f.name).second, at, ".name '", f.name, "' is given twice; names must be unique");
    if (f.command.empty())
      GTPO_CHECK(is_builtin_reward(f.name), at, ": '", f.name, "' is not a built-in reward (",
                 config::join(builtin_reward_names()), "); an external reward needs a command");
    else
      GTPO_CHECK(!is_builtin_reward(f.name), at, ": '", f.name,
                 "' is a built-in reward's name; give the external reward another name");
    GTPO_CHECK(!f.token_rewards || !f.command.empty() || f.name == "length", at,
               ".token_rewards: the built-in '", f.name,
               "' has no token rewards (of the built-ins only length gives them)");
  }
}

RewardScore builtin_reward(const std::string& name, const data::Verdict& verdict, int64_t length,
                           int64_t max_new_tokens, bool token_rewards) {
  RewardScore s;
  if (name == "correct") {
    s.value = verdict.correct ? 1.0 : 0.0;
    s.correct = verdict.correct;
  } else if (name == "format") {
    s.value = verdict.well_formed ? 1.0 : 0.0;
  } else if (name == "length") {
    const double scale = static_cast<double>(std::max<int64_t>(1, max_new_tokens));
    s.value = -static_cast<double>(length) / scale;
    if (token_rewards) s.token_rewards.assign(static_cast<std::size_t>(length), -1.0 / scale);
  } else {
    fail("unknown built-in reward '", name, "' (", config::join(builtin_reward_names()), ")");
  }
  return s;
}

RewardOutcome combine_scores(const std::vector<RewardFunctionConfig>& functions, std::vector<RewardScore> scores,
                             double correct_threshold, bool truncated) {
  GTPO_CHECK(scores.size() == functions.size(), "combine_scores: ", scores.size(), " scores for ",
             functions.size(), " reward functions");
  RewardOutcome out;
  bool any_flag = false, all_flags = true;
  for (std::size_t f = 0; f < functions.size(); ++f) {
    out.total += functions[f].weight * scores[f].value;
    if (scores[f].correct) {
      any_flag = true;
      all_flags = all_flags && *scores[f].correct;
    }
  }
  if (!(std::abs(out.total) <= kMaxRewardMagnitude)) {
    std::string terms;
    for (std::size_t f = 0; f < functions.size(); ++f)
      terms += (f ? " + " : "") + functions[f].name + " " + config::format_double(functions[f].weight) +
               " x " + config::format_double(scores[f].value);
    fail("the reward r_i = ", terms, " = ", out.total, " is beyond +-",
         config::format_double(kMaxRewardMagnitude),
         ", where a group's mean and standard deviation overflow: lower reward.functions[].weight");
  }
  out.correct = !truncated && (any_flag ? all_flags : out.total >= correct_threshold);
  for (std::size_t f = 0; f < functions.size(); ++f) {
    const std::vector<double>& tokens = scores[f].token_rewards;
    if (tokens.empty()) continue;
    if (out.token_rewards.empty()) out.token_rewards.assign(tokens.size(), 0.0);
    GTPO_CHECK(tokens.size() == out.token_rewards.size(), "combine_scores: reward '", functions[f].name,
               "' gave ", tokens.size(), " token rewards where another function gave ",
               out.token_rewards.size());
    for (std::size_t t = 0; t < tokens.size(); ++t) out.token_rewards[t] += functions[f].weight * tokens[t];
  }
  out.scores = std::move(scores);
  return out;
}

namespace {
struct Moments {
  double sum = 0, sq = 0, n = 0;
  void add(double v) { sum += v, sq += v * v, n += 1; }
  double mean() const { return n > 0 ? sum / n : 0.0; }
  double std() const { return n > 0 ? std::sqrt(std::max(0.0, sq / n - mean() * mean())) : 0.0; }
};
}  // namespace

nlohmann::json reward_metrics(const std::vector<RewardFunctionConfig>& functions,
                              const std::vector<const RewardOutcome*>& outcomes) {
  nlohmann::json m = nlohmann::json::object();
  for (std::size_t f = 0; f < functions.size(); ++f) {
    Moments value;
    std::vector<std::pair<std::string, Moments>> components;  // first-seen order
    for (const RewardOutcome* o : outcomes) {
      if (f >= o->scores.size()) continue;
      const RewardScore& s = o->scores[f];
      value.add(s.value);
      for (const auto& [name, v] : s.components) {
        auto it = std::find_if(components.begin(), components.end(),
                               [&name = name](const auto& c) { return c.first == name; });
        if (it == components.end()) it = components.insert(components.end(), {name, Moments{}});
        it->second.add(v);
      }
    }
    const std::string base = "rewards/" + functions[f].name + "/";
    m[base + "mean"] = value.mean();
    m[base + "std"] = value.std();
    for (const auto& [name, c] : components) {
      m[base + name + "/mean"] = c.mean();
      m[base + name + "/std"] = c.std();
    }
  }
  return m;
}

std::string reward_summary(const std::vector<RewardFunctionConfig>& functions, const nlohmann::json& metrics) {
  std::string line = "rewards:";
  for (std::size_t f = 0; f < functions.size(); ++f) {
    const std::string base = "rewards/" + functions[f].name + "/";
    if (!metrics.contains(base + "mean")) continue;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s %s %.3f±%.3f", f == 0 ? "" : " |", functions[f].name.c_str(),
                  metrics[base + "mean"].get<double>(), metrics[base + "std"].get<double>());
    line += buf;
  }
  return line;
}

}  // namespace gtpo::rl
