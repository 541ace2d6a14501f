// The spec's test vectors (shared/spec/rl-algorithms.md, "Test vectors"), exact to 1e-4.
#include <catch2/catch.hpp>
#include <optional>

#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "tests/support/spec_group.h"

using namespace gtpo::rl;

namespace {

using gtpo::testing::spec_group;

RlConfig spec_config(const std::string& algo) {
  RlConfig cfg = defaults_for(algo);
  cfg.overlong = Overlong::None;  // the vectors have no length penalty
  return cfg;
}

void check(const std::vector<float>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) CHECK(got[k] == Approx(want[k]).margin(1e-4));
}

}  // namespace

TEST_CASE("GTPO shaped rewards match the spec vector") {
  const AdvantageResult r = compute_advantages(spec_group(), spec_config("gtpo"));
  REQUIRE(r.token_level_shaping);
  check(r.responses[0].shaped, {1.16, 1.05, 1.10});
  check(r.responses[1].shaped, {1.04, 1.15});
  check(r.responses[2].shaped, {-1.1667, -1.0667, -1.10});
  check(r.responses[3].shaped, {-1.0333, -1.1333});
}

TEST_CASE("GTPO joint advantage matches the spec vector") {
  const AdvantageResult r = compute_advantages(spec_group(), spec_config("gtpo"));
  check(r.responses[0].advantages, {1.0535, 0.9536, 0.9990});
  check(r.responses[1].advantages, {0.9445, 1.0444});
  check(r.responses[2].advantages, {-1.0596, -0.9688, -0.9990});
  check(r.responses[3].advantages, {-0.9385, -1.0293});
}

TEST_CASE("GTPO separate advantage matches the spec vector") {
  RlConfig cfg = spec_config("gtpo");
  set_rl_option(cfg, "gtpo.adv_norm", "separate");
  const AdvantageResult r = compute_advantages(spec_group(), cfg);
  check(r.responses[0].advantages, {1.2147, -1.0122, 0.0});
  check(r.responses[1].advantages, {-1.2147, 1.0122});
  check(r.responses[2].advantages, {-1.4142, 0.7071, 0.0});
  check(r.responses[3].advantages, {1.4142, -0.7071});
}

TEST_CASE("GRPO-S shaped rewards and advantages match the spec vector") {
  const AdvantageResult r = compute_advantages(spec_group(), spec_config("grpo_s"));
  REQUIRE(!r.token_level_shaping);
  REQUIRE(r.sequence_level_loss);
  const std::vector<double> shaped = {1.1077, 1.0923, -1.1169, -1.0831};
  const std::vector<double> adv = {1.0069, 0.9929, -1.0153, -0.9846};
  for (std::size_t i = 0; i < 4; ++i) {
    check(r.responses[i].shaped, {shaped[i]});
    CHECK(r.responses[i].seq_advantage == Approx(adv[i]).margin(1e-4));
    for (float a : r.responses[i].advantages) CHECK(a == Approx(adv[i]).margin(1e-4));
  }
}

// RLOO's vectors by hand: Â_i = r_i − (mean of the other K − 1 rewards), on every token.
TEST_CASE("RLOO advantages are each reward minus the mean of the others (vectors by hand)") {
  const auto check_group = [](std::vector<Response> batch, const std::vector<double>& want) {
    const AdvantageResult r = compute_advantages(batch, spec_config("rloo"));
    REQUIRE(!r.token_level_shaping);
    REQUIRE(!r.sequence_level_loss);
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("response " << i);
      CHECK(r.responses[i].seq_advantage == Approx(want[i]).margin(1e-6));
      REQUIRE(r.responses[i].advantages.size() == batch[i].entropies.size());
      for (float a : r.responses[i].advantages) CHECK(a == Approx(want[i]).margin(1e-6));
    }
  };
  // c = 1, 1, 0, 0: 1 − (1 + 0 + 0)/3 = 2/3 for the correct ones, 0 − (1 + 1 + 0)/3 = −2/3 for the others.
  check_group(spec_group(), {2.0 / 3, 2.0 / 3, -2.0 / 3, -2.0 / 3});
  // Rewards from the run's reward functions, 0.5, 1, 0, 0.25: 0.5 − 1.25/3, 1 − 0.75/3, 0 − 1.75/3, 0.25
  // − 1.5/3.
  std::vector<Response> scored = spec_group();
  const double rewards[] = {0.5, 1.0, 0.0, 0.25};
  for (std::size_t i = 0; i < scored.size(); ++i) scored[i].reward = rewards[i];
  check_group(scored, {0.5 - 1.25 / 3, 1.0 - 0.75 / 3, 0.0 - 1.75 / 3, 0.25 - 1.5 / 3});
  // Two groups are separate; a group of two is r_i − r_j.
  check_group({{"q", true, false, -1, {2.0f, 0.5f}, std::nullopt},
               {"q", false, false, -1, {0.2f}, std::nullopt},
               {"p", true, false, -1, {1.0f}, std::nullopt},
               {"p", true, false, -1, {0.5f, 1.5f}, std::nullopt}},
              {1.0, -1.0, 0.0, 0.0});
}
