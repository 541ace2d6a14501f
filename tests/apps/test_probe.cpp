// gtpo probe (rl/probe.h): the entropy profile and mixed-group share by hand, and on a tiny model that two
// methods with identical advantages have gradient cosine 1 while two independent batches do not.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "rl/probe.h"
#include "runtime/error.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Matchers::Contains;

TEST_CASE("probe: the entropy profile's mean, nearest-rank quantiles and shares, by hand", "[apps][probe]") {
  rl::Response a, b;
  for (float h : {0.05f, 0.15f, 0.25f, 0.35f, 0.45f, 0.55f}) a.entropies.push_back(h);
  for (float h : {0.95f, 0.65f, 0.75f, 0.85f}) b.entropies.push_back(h);
  const rl::EntropyProfile p = rl::entropy_profile({a, b});
  CHECK(p.tokens == 10);
  CHECK(p.mean == Approx(0.5));
  CHECK(p.p50 == Approx(0.45));  // the 5th of 10
  CHECK(p.p80 == Approx(0.75));  // the 8th
  CHECK(p.p95 == Approx(0.95));  // the 10th: ⌈9.5⌉
  CHECK(p.above_0_3 == Approx(0.7));
  CHECK(p.above_0_67 == Approx(0.3));
  CHECK(rl::entropy_profile({}).tokens == 0);
}

TEST_CASE("probe: a group is mixed when its rewards are not all equal", "[apps][probe]") {
  rl::RolloutBatch batch;
  batch.group_size = 2;
  for (double r : {1.0, 1.0, 0.0, 1.0, 0.5, 0.5}) {
    batch.items.emplace_back();
    batch.items.back().reward.total = r;
  }
  CHECK(rl::mixed_group_share(batch) == Approx(1.0 / 3));
}

TEST_CASE("probe: identical advantages give cosine 1, an independent batch less, JSON as documented",
          "[apps][probe]") {
  const std::string dir = testing::fresh_temp_dir("probe");
  const std::string config = dir + "/config.yaml", json_path = dir + "/probe.json";
  // A length reward gives every group a spread of rewards, so every method has a gradient.
  std::ofstream(config) << testing::tiny_run_yaml(
      {{"sampler.group_size", "4"},
       {"sampler.max_new_tokens", "12"},
       {"sampler.temperature", "1.0"},
       {"reward.functions", "[{name: correct, weight: 1}, {name: length, weight: 1}]"},
       {"rl.dynamic_sampling", "false"},
       {"train.prompts_per_step", "4"},
       {"train.out_dir", dir + "/run"}});
  const std::string methods =
      "dapo,dapo_forking:dapo_forking.rho=1,dapo_forking:dapo_forking.select=random,gtpo";
  REQUIRE(testing::call_command({"probe", config, "--methods", methods, "--json", json_path},
                                apps::run_probe) == 0);
  std::stringstream text;
  text << std::ifstream(json_path).rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str());
  for (const char* key : {"groups", "group_size", "temperature", "accuracy", "entropy", "mixed_groups",
                          "baseline", "methods", "noise_floor"})
    CHECK(j.contains(key));
  CHECK(j.at("groups") == 4);
  CHECK(j.at("baseline") == "dapo");
  CHECK(j.at("mixed_groups").get<double>() > 0.0);
  CHECK(j.at("entropy").at("mean").get<double>() > 0.0);
  const nlohmann::json& m = j.at("methods");
  REQUIRE(m.size() == 4);
  CHECK(m[0].at("cosine").get<double>() == Approx(1.0).epsilon(1e-9));
  // ρ = 1 keeps every token: dapo's weights and advantages exactly, so the same gradient.
  CHECK(m[1].at("grad_norm") == m[0].at("grad_norm"));
  CHECK(m[1].at("loss_tokens") == m[0].at("loss_tokens"));
  CHECK(m[1].at("cosine").get<double>() == Approx(1.0).epsilon(1e-9));
  CHECK(m[2].at("cosine").get<double>() < 0.999);  // a fifth of the tokens at random
  const double floor = j.at("noise_floor").get<double>();
  CHECK(floor < 0.999);
  CHECK(floor > -1.0);
}

TEST_CASE("probe: a bad method is named", "[apps][probe]") {
  const std::string dir = testing::fresh_temp_dir("probe_bad");
  const std::string config = dir + "/config.yaml";
  std::ofstream(config) << testing::tiny_run_yaml({{"train.out_dir", dir + "/run"}});
  CHECK_THROWS_WITH(testing::call_command({"probe", config, "--methods", "dapo,nosuch"}, apps::run_probe),
                    Contains("nosuch"));
  CHECK_THROWS_WITH(
      testing::call_command({"probe", config, "--methods", "gtpo:gtpo.alpha2"}, apps::run_probe),
      Contains("'gtpo.alpha2'") && Contains("KEY=VALUE"));
  CHECK_THROWS_WITH(
      testing::call_command({"probe", config, "--methods", "gtpo:gtpo.nokey=1"}, apps::run_probe),
      Contains("nokey") && Contains("gtpo"));
}
