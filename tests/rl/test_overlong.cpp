// Overlong penalties, hand-computed.
#include <catch2/catch.hpp>
#include <optional>

#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/overlong.h"
#include "runtime/error.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;

TEST_CASE("dapo_soft: 0, then linear to -1 at L_max, -1 beyond") {
  // L_max = 100, L_cache = 20: the ramp is (80, 100].
  CHECK(dapo_soft_penalty(0, 100, 20) == 0.0);
  CHECK(dapo_soft_penalty(80, 100, 20) == 0.0);
  CHECK(dapo_soft_penalty(81, 100, 20) == Approx(-0.05));
  CHECK(dapo_soft_penalty(90, 100, 20) == Approx(-0.5));
  CHECK(dapo_soft_penalty(100, 100, 20) == Approx(-1.0));
  CHECK(dapo_soft_penalty(101, 100, 20) == -1.0);
  // No buffer: a hard cliff after L_max.
  CHECK(dapo_soft_penalty(100, 100, 0) == 0.0);
  CHECK(dapo_soft_penalty(101, 100, 0) == -1.0);
}

TEST_CASE("dapo_soft in dapo: added to r before the group z-score, buffer defaults to 20% of L_max") {
  RlConfig cfg = defaults_for("dapo");
  cfg.dynamic_sampling = false;
  std::vector<Response> batch(2);
  batch[0] = {"q", true, false, 90, {}, std::nullopt};
  batch[1] = {"q", true, false, 50, {}, std::nullopt};
  CHECK_THROWS_WITH(compute_advantages(batch, cfg), Contains("sampler.max_new_tokens"));
  BatchContext l_max;
  l_max.max_new_tokens = 100;
  CHECK(overlong_buffer_tokens(cfg, l_max.max_new_tokens) == 20);
  const AdvantageResult r = compute_advantages(batch, cfg, l_max);
  CHECK(r.responses[0].shaped[0] == Approx(0.5));  // +1 − 0.5
  CHECK(r.responses[1].shaped[0] == Approx(1.0));
  CHECK(r.responses[0].overlong_penalty == Approx(-0.5));
  CHECK(r.responses[0].seq_advantage == Approx(-1.0).margin(1e-4));
  CHECK(r.diagnostics.overlong_penalised == 1);
  CHECK(r.diagnostics.overlong_penalty_mean == Approx(-0.25));
  CHECK(r.diagnostics.overlong_penalty_min == Approx(-0.5));
  set_rl_option(cfg, "rl.overlong_buffer", "5");
  CHECK(compute_advantages(batch, cfg, l_max).responses[0].overlong_penalty == 0.0f);
}

TEST_CASE("GROP knee and piecewise penalty") {
  CHECK(grop_knee({10, 20, 30}) == Approx(20.0));       // (10+30)/2 = 20 = mean
  CHECK(grop_knee({10, 20, 45}) == Approx(27.5));       // midrange beats mean 25
  CHECK(grop_knee({10, 10, 10, 40}) == Approx(25.0));   // midrange 25 beats mean 17.5
  CHECK(grop_knee({2, 30, 31, 32}) == Approx(23.75));   // mean 23.75 beats midrange 17
  CHECK(grop_knee_penalty(19, 20.0) == 0.0);
  CHECK(grop_knee_penalty(20, 20.0) == 0.0);
  CHECK(grop_knee_penalty(30, 20.0) == Approx(-0.25));
  CHECK(grop_knee_penalty(39, 20.0) == Approx(-0.475));
  CHECK(grop_knee_penalty(40, 20.0) == -0.5);
  CHECK(grop_knee_penalty(400, 20.0) == -0.5);
  CHECK(grop_knee_penalty(5, 0.0) == 0.0);
}

TEST_CASE("GROP easy group: correct responses against the knee of the correct lengths") {
  // n/G = 3/4 ≥ γ1: knee over correct {10, 20, 45} = 27.5.
  const auto p = grop_penalties({10, 20, 45, 200}, {true, true, true, false});
  CHECK(p[0] == 0.0);
  CHECK(p[1] == 0.0);
  CHECK(p[2] == Approx(-0.5 * 17.5 / 27.5));
  CHECK(p[3] == 0.0);  // incorrect responses are not penalised in an easy group
  // Beyond 2L: knee of {0, 0, 0, 10} = 5 and 10 ≥ 2·5.
  const auto q = grop_penalties({0, 0, 0, 10}, {true, true, true, true});
  CHECK(q == std::vector<double>{0.0, 0.0, 0.0, -0.5});
}

TEST_CASE("GROP hard group: no penalty") {
  CHECK(grop_penalties({10, 500, 600, 700}, {true, false, false, false}) == std::vector<double>(4, 0.0));
  CHECK(grop_penalties({10, 500}, {false, false}) == std::vector<double>(2, 0.0));
}

TEST_CASE("GROP middle group: knee over all G, correct penalised when n > m, else incorrect") {
  // n = m = 2: knee over {10, 12, 30, 40} = max(25, 23) = 25; the incorrect ones are penalised.
  const auto p = grop_penalties({10, 12, 30, 40}, {true, true, false, false});
  CHECK(p[0] == 0.0);
  CHECK(p[1] == 0.0);
  CHECK(p[2] == Approx(-0.1));
  CHECK(p[3] == Approx(-0.3));
  // n = 3 > m = 2 (3/5 is between 1/4 and 3/4): knee over {10, 50, 20, 5, 15} = max(27.5, 20) = 27.5.
  const auto q = grop_penalties({10, 50, 20, 5, 15}, {true, true, true, false, false});
  CHECK(q[1] == Approx(-0.5 * 22.5 / 27.5));
  CHECK(q[3] == 0.0);
  CHECK(q[4] == 0.0);
}

TEST_CASE("GROP in GTPO: the penalty is added to every token's shaped reward") {
  RlConfig cfg = defaults_for("gtpo");
  CHECK(cfg.overlong == Overlong::Grop);
  cfg.dynamic_sampling = false;
  std::vector<Response> batch = {
      {"q", true, false, -1, std::vector<float>(10, 1.0f), std::nullopt},
      {"q", true, false, -1, std::vector<float>(12, 1.0f), std::nullopt},
      {"q", false, false, -1, std::vector<float>(30, 1.0f), std::nullopt},
      {"q", false, false, -1, std::vector<float>(40, 1.0f), std::nullopt},
  };
  const AdvantageResult r = compute_advantages(batch, cfg);
  for (float s : r.responses[2].shaped) CHECK(s == Approx(-1.1 - 0.1));
  for (float s : r.responses[3].shaped) CHECK(s == Approx(-1.1 - 0.3));
  for (float s : r.responses[0].shaped) CHECK(s == Approx(1.1));
  // And to r̂ for GRPO-S.
  RlConfig s = defaults_for("grpo_s");
  s.dynamic_sampling = false;
  const AdvantageResult g = compute_advantages(batch, s);
  CHECK(g.responses[3].shaped[0] == Approx(-1.1 - 0.3));
}
