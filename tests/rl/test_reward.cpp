// Reward functions as plain functions: built-ins, the weighted sum, the correctness rule, the per-function
// metrics, reply parsing, and the reward section of the run config (a list of mappings: reading, errors
// naming file:line and key, overrides, the resolved-config round trip).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "rl/external_reward.h"
#include "rl/reward.h"
#include "rl/run_config.h"
#include "runtime/error.h"

using namespace gtpo;
using namespace gtpo::rl;
using Catch::Matchers::Contains;

namespace {

const std::string kModel =
    "model: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, max_position_embeddings: 64}\n";

RewardScore score(double value, std::optional<bool> correct = std::nullopt) {
  RewardScore s;
  s.value = value;
  s.correct = correct;
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("without a reward list the reward is the verifier alone, weight 1", "[reward]") {
  const RewardSection none;
  CHECK_FALSE(has_reward_functions(none));
  const std::vector<RewardFunctionConfig> f = reward_functions(none);
  REQUIRE(f.size() == 1);
  CHECK(f[0].name == "correct");
  CHECK(f[0].weight == 1.0);
  CHECK(f[0].command.empty());
  CHECK(none.correct_threshold == 0.5);
}

TEST_CASE("built-in rewards: correct, format, length", "[reward]") {
  data::Verdict v;
  v.correct = true;
  v.well_formed = false;
  const RewardScore c = builtin_reward("correct", v, 10, 40);
  CHECK(c.value == 1.0);
  REQUIRE(c.correct.has_value());
  CHECK(*c.correct);
  CHECK(builtin_reward("format", v, 10, 40).value == 0.0);
  CHECK_FALSE(builtin_reward("format", v, 10, 40).correct.has_value());
  v.correct = false;
  v.well_formed = true;
  CHECK(builtin_reward("correct", v, 10, 40).value == 0.0);
  CHECK(builtin_reward("format", v, 10, 40).value == 1.0);
  CHECK(builtin_reward("length", v, 10, 40).value == -0.25);
  CHECK(builtin_reward("length", v, 40, 40).value == -1.0);
  CHECK_THAT(error_of([&] { builtin_reward("bogus", v, 1, 1); }), Contains("correct, format, length"));
}

TEST_CASE("r_i is the weighted sum of the functions' values", "[reward]") {
  const std::vector<RewardFunctionConfig> f = {
      {"correct", 1.0, "", false}, {"mine", 0.5, "x", false}, {"length", 0.1, "", false}};
  const RewardOutcome o = combine_scores(f, {score(1.0, true), score(0.4), score(-0.25)}, 0.5, false);
  CHECK(o.total == 1.0 * 1.0 + 0.5 * 0.4 + 0.1 * -0.25);
  REQUIRE(o.scores.size() == 3);
  CHECK(o.scores[1].value == 0.4);
  CHECK_THAT(error_of([&] { combine_scores(f, {score(1.0)}, 0.5, false); }), Contains("1 scores for 3"));
}

// A weight of 1e300 made every r_i 0 or 1e300: the group's variance overflowed, every advantage was 0 and
// grpo trained on nothing, with a warning that blamed the rewards. The weight is bounded where it is read,
// and a sum beyond the bound (large weights times large external values) stops the run naming its terms.
TEST_CASE("r_i and the weights are bounded by 1e12: beyond it is an error naming the weight", "[reward]") {
  CHECK_THAT(error_of([&] {
               parse_run_config(kModel + "reward:\n  functions:\n    - {name: correct, weight: 1}\n",
                                "run.yaml", {{"reward.functions[0].weight", "1e300"}});
             }),
             Contains("reward.functions[0].weight") && Contains("1e300") && Contains("[-1e+12, 1e+12]"));
  const std::vector<RewardFunctionConfig> f = {{"correct", 1.0, ""}, {"mine", 1e12, "x"}};
  CHECK_THAT(error_of([&] {
               combine_scores(f, {score(1.0, true), score(2.0)}, 0.5, false);
             }),
             Contains("correct 1 x 1 + mine 1e+12 x 2") && Contains("beyond +-1e+12") &&
                 Contains("reward.functions[].weight"));
  CHECK(combine_scores(f, {score(0.0, true), score(1.0)}, 0.5, false).total == 1e12);
}

TEST_CASE("correctness: the functions' flags when given, else r_i >= correct_threshold, never when truncated",
          "[reward]") {
  const std::vector<RewardFunctionConfig> one = {{"mine", 1.0, "x", false}};
  // No flag: the threshold decides, inclusive.
  CHECK(combine_scores(one, {score(0.5)}, 0.5, false).correct);
  CHECK_FALSE(combine_scores(one, {score(0.49)}, 0.5, false).correct);
  CHECK(combine_scores(one, {score(-1.0)}, -2.0, false).correct);
  // A flag overrides the threshold either way.
  CHECK_FALSE(combine_scores(one, {score(0.9, false)}, 0.5, false).correct);
  CHECK(combine_scores(one, {score(0.1, true)}, 0.5, false).correct);
  // Several flags: all must say correct; functions without a flag do not vote.
  const std::vector<RewardFunctionConfig> two = {
      {"correct", 1.0, "", false}, {"mine", 1.0, "x", false}, {"format", 1.0, "", false}};
  CHECK(combine_scores(two, {score(1, true), score(0, true), score(0)}, 10.0, false).correct);
  CHECK_FALSE(combine_scores(two, {score(1, true), score(1, false), score(1)}, 0.0, false).correct);
  // Truncated responses are incorrect whatever the functions say.
  CHECK_FALSE(combine_scores(one, {score(1.0, true)}, 0.5, true).correct);
  CHECK_FALSE(combine_scores(one, {score(1.0)}, 0.5, true).correct);
  // The default (verifier alone, threshold 0.5) gives exactly the verifier's outcome: r_i = c_i.
  data::Verdict v;
  for (bool correct : {false, true}) {
    v.correct = correct;
    const RewardOutcome o =
        combine_scores(reward_functions({}), {builtin_reward("correct", v, 3, 8)}, RewardSection{}.correct_threshold, false);
    CHECK(o.correct == correct);
    CHECK(o.total == (correct ? 1.0 : 0.0));
  }
}

TEST_CASE("reward metrics: rewards/NAME/mean and std per function and per component", "[reward]") {
  const std::vector<RewardFunctionConfig> f = {{"correct", 1.0, "", false}, {"mine", 0.5, "x", false}};
  std::vector<RewardOutcome> outcomes;
  for (double v : {0.0, 1.0, 1.0, 0.0}) {
    RewardScore m = score(v * 0.5);
    m.components = {{"match", v}, {"len", 2.0}};
    outcomes.push_back(combine_scores(f, {score(v, v > 0), m}, 0.5, false));
  }
  std::vector<const RewardOutcome*> ptrs;
  for (const RewardOutcome& o : outcomes) ptrs.push_back(&o);
  const nlohmann::json m = reward_metrics(f, ptrs);
  CHECK(m["rewards/correct/mean"].get<double>() == 0.5);
  CHECK(m["rewards/correct/std"].get<double>() == 0.5);
  CHECK(m["rewards/mine/mean"].get<double>() == 0.25);
  CHECK(m["rewards/mine/std"].get<double>() == 0.25);
  CHECK(m["rewards/mine/match/mean"].get<double>() == 0.5);
  CHECK(m["rewards/mine/len/mean"].get<double>() == 2.0);
  CHECK(m["rewards/mine/len/std"].get<double>() == 0.0);
  CHECK(m.size() == 8);
  const std::string line = reward_summary(f, m);
  CHECK_THAT(line, Contains("correct 0.500±0.500"));
  CHECK_THAT(line, Contains("mine 0.250±0.250"));
  // No outcomes: zeros, not NaN.
  const nlohmann::json empty = reward_metrics(f, {});
  CHECK(empty["rewards/mine/mean"].get<double>() == 0.0);
}

TEST_CASE("a reply line: reward, optional correct and components, every defect named", "[reward]") {
  const RewardScore s = parse_reward_reply(
      R"({"id": 7, "reward": 0.75, "correct": true, "components": {"a": 1, "b": -2.5}})", 7);
  CHECK(s.value == 0.75);
  REQUIRE(s.correct.has_value());
  CHECK(*s.correct);
  REQUIRE(s.components.size() == 2);
  CHECK(s.components[0] == std::make_pair(std::string("a"), 1.0));
  CHECK(s.components[1] == std::make_pair(std::string("b"), -2.5));
  CHECK_FALSE(parse_reward_reply(R"({"id": 7, "reward": -3})", 7).correct.has_value());
  CHECK_THAT(error_of([] { parse_reward_reply("hello", 7); }), Contains("not JSON"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": NaN})", 7); }),
             Contains("not JSON"));  // Python's json.dumps(nan)
  CHECK_THAT(error_of([] { parse_reward_reply("[1]", 7); }), Contains("must be a JSON object"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "score": 1})", 7); }),
             Contains("no \"reward\" field"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": "1"})", 7); }),
             Contains("must be a number, got a string"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1e999})", 7); }),
             Contains("number overflow"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1, "correct": 1})", 7); }),
             Contains("true or false"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1, "components": [1]})", 7); }),
             Contains("object of numbers"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1, "components": {"x": null}})", 7); }),
             Contains("\"components.x\" must be a number"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1, "components": {"a/b": 1}})", 7); }),
             Contains("'a/b'"));
  // The id matches each reply to its request; a reward too large for a group's statistics is refused.
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"reward": 1})", 7); }),
             Contains("no \"id\" field") && Contains("7"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 6, "reward": 1})", 7); }),
             Contains("answers id 6 where id 7 was expected"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1e308})", 7); }),
             Contains("beyond +-1e+12"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 7, "reward": 1, "components": {"x": -1e13}})", 7); }),
             Contains("components.x"));
  CHECK(parse_reward_reply(R"({"id": 7, "reward": -1e12})", 7).value == -1e12);
}

TEST_CASE("the reward section: a list of functions read from YAML, with overrides", "[reward][config]") {
  const RunConfig c = parse_run_config(kModel + R"(reward:
  correct_threshold: 0.8
  timeout_s: 5
  functions:
    - name: correct
      weight: 2
    - {name: mine, command: "python3 my reward.py", weight: 0.5}
    - name: length
)",
                                       "run.yaml", {{"reward.functions[2].weight", "0.1"}});
  REQUIRE(c.reward.functions.size() == 3);
  CHECK(c.reward.correct_threshold == 0.8);
  CHECK(c.reward.timeout_s == 5.0);
  CHECK(c.reward.functions[0].name == "correct");
  CHECK(c.reward.functions[0].weight == 2.0);
  CHECK(c.reward.functions[1].command == "python3 my reward.py");
  CHECK(c.reward.functions[1].weight == 0.5);
  CHECK(c.reward.functions[2].name == "length");
  CHECK(c.reward.functions[2].weight == 0.1);
  // The resolved config lists them and reads back to the same.
  const std::string yaml = resolved_config_yaml(c);
  CHECK_THAT(yaml, Contains("  functions:\n    - name: \"correct\"\n      weight: 2\n      command: \"\"\n"));
  CHECK(resolved_config_yaml(parse_run_config(yaml, "resolved.yaml", {})) == yaml);
  // ~reward.functions drops the list: back to the verifier alone.
  const RunConfig dropped = parse_run_config(kModel + "reward: {functions: [{name: format}]}\n", "run.yaml",
                                             {{"~reward.functions", ""}});
  CHECK(dropped.reward.functions.empty());
  // An item added on the command line after the file's.
  const RunConfig added = parse_run_config(kModel + "reward: {functions: [{name: correct}]}\n", "run.yaml",
                                           {{"reward.functions[1].name", "format"}, {"reward.functions[1].weight", "0.2"}});
  REQUIRE(added.reward.functions.size() == 2);
  CHECK(added.reward.functions[1].weight == 0.2);
  // An empty list is the default.
  CHECK(parse_run_config(kModel + "reward: {functions: []}\n", "run.yaml").reward.functions.empty());
}

TEST_CASE("reward section errors name the file, line and key", "[reward][config]") {
  const auto parse_error = [](const std::string& yaml, const ConfigOverrides& o = {}) {
    return error_of([&] { parse_run_config(kModel + yaml, "run.yaml", o); });
  };
  CHECK_THAT(parse_error("reward:\n  functions:\n    - name: correct\n      weight: heavy\n"),
             Contains("run.yaml:5: reward.functions[0].weight: expected number in [-1e+12, 1e+12], got 'heavy'"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - name: correct\n      colour: red\n"),
             Contains("run.yaml:5: unknown key 'functions[0].colour' in section 'reward'"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - name: correct\n      name: format\n"),
             Contains("appears twice (first at run.yaml:4)"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - correct\n"),
             Contains("run.yaml:4: reward.functions must be a single value, not a list"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - name: [a, b]\n"), Contains("run.yaml:4"));
  CHECK_THAT(parse_error("reward:\n  timeout_s: [1]\n"), Contains("reward.timeout_s must be a single value, not a list"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - weight: 1\n"),
             Contains("run.yaml: reward.functions[0].name is required"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - name: mine\n"), Contains("'mine' is not a built-in reward"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - {name: correct, command: x}\n"),
             Contains("is a built-in reward's name"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - {name: format}\n    - {name: format}\n"),
             Contains("reward.functions[1].name 'format' is given twice"));
  CHECK_THAT(parse_error("reward:\n  functions:\n    - {name: a/b, command: x}\n"), Contains("must not hold '/'"));
  CHECK_THAT(parse_error("", {{"reward.functions[1].name", "format"}}),
             Contains("command line: reward.functions[1].name: item 1 of reward.functions follows only 0 item(s)"));
  CHECK_THAT(parse_error("reward: {timeout_s: 0}\n"), Contains("reward.timeout_s: expected number > 0"));
  CHECK_THAT(parse_error("", {{"reward.functions[].name", "format"}}), Contains("reward.functions[].name is a key of the items of a list"));
}

TEST_CASE("a reply's token_rewards: one finite number per token, every defect named with the id and lengths",
          "[reward][token_rewards]") {
  const RewardScore s = parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": [0.5, -1, 0]})", 3, 3);
  CHECK(s.token_rewards == std::vector<double>{0.5, -1.0, 0.0});
  CHECK(parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": []})", 3, 0).token_rewards.empty());
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": [1, 2]})", 3, 3); }),
             Contains("the reply to id 3 gives 2 token_rewards for a completion of 3 tokens"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1})", 3, 3); }),
             Contains("the reply to id 3 has no \"token_rewards\"") && Contains("3 here"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": null})", 3, 1); }),
             Contains("has no \"token_rewards\""));
  CHECK_THAT(
      error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": [1, NaN]})", 3, 2); }),
      Contains("not JSON"));
  CHECK_THAT(
      error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": [1, null]})", 3, 2); }),
      Contains("\"token_rewards[1]\" must be a number, got null"));
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": [1e13]})", 3, 1); }),
             Contains("\"token_rewards[0]\" is 1e+13, beyond +-1e+12"));
  CHECK_THAT(
      error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": {"a": 1}})", 3, 1); }),
      Contains("\"token_rewards\" must be a list of numbers, got an object"));
  // A function that does not declare them: a reply with them is refused, not silently ignored.
  CHECK_THAT(error_of([] { parse_reward_reply(R"({"id": 3, "reward": 1, "token_rewards": [1]})", 3); }),
             Contains("reward.functions[].token_rewards is false: set it to true"));
}

TEST_CASE("the reward section's token rewards: the per-function switch, token_gamma, what is refused or said",
          "[reward][config][token_rewards]") {
  const RunConfig c = parse_run_config(kModel + R"(reward:
  token_gamma: 0.9
  functions:
    - {name: steps, command: "python3 steps.py", token_rewards: true}
    - {name: length, token_rewards: true}
)",
                                       "run.yaml");
  CHECK(c.reward.token_gamma == 0.9);
  CHECK(c.reward.functions[0].token_rewards);
  CHECK(c.reward.functions[1].token_rewards);
  CHECK(resolved_config_yaml(parse_run_config(resolved_config_yaml(c), "resolved.yaml", {})) ==
        resolved_config_yaml(c));
  CHECK(parse_run_config(kModel, "run.yaml").reward.token_gamma == 1.0);
  CHECK_THAT(
      error_of([] {
        parse_run_config(kModel + "reward: {functions: [{name: correct, token_rewards: true}]}\n",
                         "run.yaml");
      }),
      Contains("run.yaml: reward.functions[0].token_rewards: the built-in 'correct' has no token rewards"));
  CHECK_THAT(error_of([] { parse_run_config(kModel + "reward: {token_gamma: 1.5}\n", "run.yaml"); }),
             Contains("reward.token_gamma"));
  const RunConfig unread = parse_run_config(kModel + "reward: {token_gamma: 0.5}\n", "run.yaml");
  bool said = false;
  for (const std::string& note : unread.notes) said = said || note.find("reward.token_gamma (run.yaml") == 0;
  CHECK(said);
}

TEST_CASE("the teacher section: its keys, and what has no effect without teacher.path", "[reward][config]") {
  const auto notes_with = [](const std::string& needle, const RunConfig& c) {
    return std::count_if(c.notes.begin(), c.notes.end(),
                         [&](const std::string& n) { return n.find(needle) != std::string::npos; });
  };
  const RunConfig c = parse_run_config(
      kModel + "teacher: {path: runs/t, weight: 0.5}\nreward: {token_gamma: 0}\n", "run.yaml");
  CHECK(c.teacher.path == "runs/t");
  CHECK(c.teacher.weight == 0.5);
  CHECK(notes_with("has no effect", c) == 0);  // a teacher gives token rewards: token_gamma is read
  CHECK(resolved_config_yaml(parse_run_config(resolved_config_yaml(c), "resolved.yaml", {})) ==
        resolved_config_yaml(c));
  const RunConfig alone = parse_run_config(kModel + "teacher: {weight: 2}\n", "run.yaml");
  CHECK(notes_with("teacher.weight (run.yaml", alone) == 1);
  CHECK(notes_with("has no effect without teacher.path", alone) == 1);
  CHECK_THAT(error_of([] { parse_run_config(kModel + "teacher: {wieght: 2}\n", "run.yaml"); }),
             Contains("teacher"));
}
