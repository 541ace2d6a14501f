// Token rewards in the advantage (docs/algorithms.md, "Token rewards"): hand vectors on the spec's group
// for a group-normalised algorithm (grpo), a token-level one (gtpo) and a sequence-level loss (grpo_s),
// with and without a discount; dropped groups, a wrong length, and the weighted sum of several functions.
#include <catch2/catch.hpp>
#include <optional>

#include "rl/math/advantages.h"
#include "rl/math/token_credit.h"
#include "rl/reward.h"
#include "runtime/error.h"
#include "tests/support/spec_group.h"

using namespace gtpo::rl;

namespace {

using gtpo::testing::spec_group;

// o1 and o3 carry token rewards (already weighted); o2 and o4 none.
const std::vector<double> kO1 = {0.5, 0.0, -1.0}, kO3 = {0.0, 0.2, 0.2}, kNone;

AdvantageResult with_token_rewards(const std::string& algo, double gamma) {
  RlConfig cfg = defaults_for(algo);
  cfg.overlong = Overlong::None;
  cfg.dynamic_sampling = false;
  BatchContext context;
  context.token_rewards = {&kO1, nullptr, &kO3, &kNone};
  context.token_gamma = gamma;
  return compute_advantages(spec_group(), cfg, context);
}

void check(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).margin(1e-4));
}

}  // namespace

TEST_CASE("token credit: the return-to-go, by hand", "[token_rewards]") {
  CHECK(token_returns({0.5, 0.0, -1.0}, 1.0) == std::vector<double>{-0.5, -1.0, -1.0});
  CHECK(token_returns({0.5, 0.0, -1.0}, 0.5) == std::vector<double>{0.25, -0.5, -1.0});
  CHECK(token_returns({0.5, 0.0, -1.0}, 0.0) == std::vector<double>{0.5, 0.0, -1.0});
  CHECK(token_returns({}, 0.9).empty());
}

TEST_CASE("token credit: grpo's group z-score plus the token returns, by hand", "[token_rewards]") {
  // c = [1, 1, 0, 0]: Â = ±0.5 / (0.5 + 1e-6) = ±0.999998 on every token, then the credit.
  AdvantageResult r = with_token_rewards("grpo", 1.0);  // returns o1 [-0.5, -1, -1], o3 [0.4, 0.4, 0.2]
  check(r.responses[0].advantages, {0.499998, -0.000002, -0.000002});
  check(r.responses[1].advantages, {0.999998, 0.999998});
  check(r.responses[2].advantages, {-0.599998, -0.599998, -0.799998});
  check(r.responses[3].advantages, {-0.999998, -0.999998});
  r = with_token_rewards("grpo", 0.5);  // returns o1 [0.25, -0.5, -1], o3 [0.15, 0.3, 0.2]
  check(r.responses[0].advantages, {1.249998, 0.499998, -0.000002});
  check(r.responses[1].advantages, {0.999998, 0.999998});
  check(r.responses[2].advantages, {-0.849998, -0.699998, -0.799998});
  check(r.responses[3].advantages, {-0.999998, -0.999998});
}

TEST_CASE("token credit: gtpo's joint advantage (the spec vector) plus the token returns, by hand",
          "[token_rewards]") {
  // Spec: o1 [1.0535, 0.9536, 0.9990], o2 [0.9445, 1.0444], o3 [-1.0596, -0.9688, -0.9990], o4 [-0.9385,
  // -1.0293].
  AdvantageResult r = with_token_rewards("gtpo", 1.0);
  check(r.responses[0].advantages, {0.5535, -0.0464, -0.0010});
  check(r.responses[1].advantages, {0.9445, 1.0444});
  check(r.responses[2].advantages, {-0.6596, -0.5688, -0.7990});
  check(r.responses[3].advantages, {-0.9385, -1.0293});
  check(r.responses[0].shaped, {1.16, 1.05, 1.10});  // GTPO's shaping itself is untouched
  r = with_token_rewards("gtpo", 0.5);
  check(r.responses[0].advantages, {1.3035, 0.4536, -0.0010});
  check(r.responses[2].advantages, {-0.9096, -0.6688, -0.7990});
}

TEST_CASE("token credit: a sequence-level loss (grpo_s) gets the mean credit on its one advantage",
          "[token_rewards]") {
  // Spec: Â = [1.0069, 0.9929, -1.0153, -0.9846]; mean credit o1 -2.5/3, o3 1/3 (γ = 1).
  const AdvantageResult r = with_token_rewards("grpo_s", 1.0);
  REQUIRE(r.sequence_level_loss);
  CHECK(r.responses[0].seq_advantage == Approx(1.0069 - 2.5 / 3).margin(1e-4));
  CHECK(r.responses[1].seq_advantage == Approx(0.9929).margin(1e-4));
  CHECK(r.responses[2].seq_advantage == Approx(-1.0153 + 1.0 / 3).margin(1e-4));
  CHECK(r.responses[3].seq_advantage == Approx(-0.9846).margin(1e-4));
}

TEST_CASE("token credit: a dropped group gets none, a wrong length is refused, none changes nothing",
          "[token_rewards]") {
  RlConfig cfg = defaults_for("dapo");
  cfg.overlong = Overlong::None;
  std::vector<Response> all_correct = spec_group();
  for (Response& x : all_correct) x.correct = true;  // dynamic sampling drops the group
  BatchContext context;
  context.token_rewards = {&kO1, nullptr, &kO3, nullptr};
  const AdvantageResult dropped = compute_advantages(all_correct, cfg, context);
  for (const ResponseResult& x : dropped.responses)
    for (float a : x.advantages) CHECK(a == 0.0f);
  const std::vector<double> short_one = {1.0, 2.0};
  context.token_rewards = {&short_one, nullptr, nullptr, nullptr};
  cfg.dynamic_sampling = false;
  CHECK_THROWS_WITH(compute_advantages(spec_group(), cfg, context),
                    Catch::Contains("response 0: 2 token rewards for a response of 3 tokens"));
  context.token_rewards = {&kNone, &kNone, &kNone, &kNone};  // given, all empty: the plain advantages
  const AdvantageResult plain = compute_advantages(spec_group(), cfg);
  const AdvantageResult empty = compute_advantages(spec_group(), cfg, context);
  for (std::size_t i = 0; i < plain.responses.size(); ++i)
    CHECK(plain.responses[i].advantages == empty.responses[i].advantages);
}

TEST_CASE("token rewards: the weighted sum over the functions that give them, and r_i stays the sequence sum",
          "[token_rewards][reward]") {
  const std::vector<RewardFunctionConfig> f = {
      {"correct", 1.0, "", false}, {"steps", 2.0, "x", true}, {"length", 0.5, "", true}};
  RewardScore steps;
  steps.value = 0.25;
  steps.token_rewards = {0.5, -0.25, 0.0, 1.0};
  gtpo::data::Verdict v;
  v.correct = true;
  const RewardScore length = builtin_reward("length", v, 4, 8, /*token_rewards=*/true);
  CHECK(length.token_rewards == std::vector<double>(4, -0.125));  // sums to its value -4/8
  CHECK(length.value == -0.5);
  const RewardOutcome o = combine_scores(f, {builtin_reward("correct", v, 4, 8), steps, length}, 0.5, false);
  CHECK(o.total == 1.0 + 2.0 * 0.25 + 0.5 * -0.5);
  CHECK(o.token_rewards == std::vector<double>{2 * 0.5 - 0.0625, 2 * -0.25 - 0.0625, -0.0625, 2.0 - 0.0625});
  CHECK(builtin_reward("length", v, 4, 8).token_rewards.empty());  // off: nothing per token
  CHECK(combine_scores(f, {RewardScore{}, RewardScore{}, RewardScore{}}, 0.5, false).token_rewards.empty());
}
