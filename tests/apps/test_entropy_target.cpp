// rl.entropy_target end to end on the tiny model (after an SFT warm start that brings the mean token entropy
// to about 1.3 nats): a target above it raises entropy_mean toward it, one below lowers it, the coefficient
// is logged every step as entropy_coef and saved in state.json, and a resumed run equals an uninterrupted
// one bit for bit.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "rl/math/entropy_control.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using testing::call_command;
namespace fs = std::filesystem;

namespace {

const std::string kConfig = testing::tiny_run_yaml({{"sampler.group_size", "4"},
                                                    {"sampler.max_new_tokens", "16"},
                                                    {"rl.algo", "grpo"},
                                                    {"rl.dynamic_sampling", "false"},
                                                    {"rl.entropy_target_step", "0.05"},
                                                    {"sft.steps", "150"},
                                                    {"sft.batch_size", "8"},
                                                    {"train.prompts_per_step", "4"},
                                                    {"train.checkpoint_every", "2"},
                                                    {"train.sample_every", "0"},
                                                    {"eval.every", "0"}});

// metrics.jsonl without the wall-clock fields.
std::vector<nlohmann::json> metrics_of(const std::string& run) {
  std::istringstream in(io::read_file(run + "/metrics.jsonl"));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (auto it = j.begin(); it != j.end();)
      it = it.key().rfind("seconds", 0) == 0 || it.key().find("per_s") != std::string::npos ? j.erase(it)
                                                                                            : std::next(it);
    out.push_back(j);
  }
  return out;
}

std::vector<nlohmann::json> train(const std::string& dir, const std::string& name,
                                  const std::vector<std::string>& settings) {
  std::vector<std::string> args = {"train", dir + "/run.yaml", "train.out_dir=" + dir + "/" + name};
  args.insert(args.end(), settings.begin(), settings.end());
  REQUIRE(call_command(args, apps::run_train) == 0);
  return metrics_of(dir + "/" + name);
}

double last_mean(const std::vector<nlohmann::json>& m, std::size_t n) {
  double sum = 0;
  for (std::size_t i = m.size() - n; i < m.size(); ++i) sum += m[i]["entropy_mean"].get<double>();
  return sum / static_cast<double>(n);
}

}  // namespace

TEST_CASE("entropy target: the coefficient's update rule by hand", "[apps][entropy_target]") {
  CHECK(rl::next_entropy_coef(0.0, 1.0, 0.05, 0.7) == 0.05);   // below the target: more bonus
  CHECK(rl::next_entropy_coef(0.0, 1.0, 0.05, 1.3) == -0.05);  // above: less, and below 0 a penalty
  CHECK(rl::next_entropy_coef(0.25, 1.0, 0.05, 1.0) == 0.25);  // at it: unchanged
}

TEST_CASE("entropy target: a target above the start's entropy raises it, one below lowers it",
          "[apps][entropy_target]") {
  const std::string dir = testing::fresh_temp_dir("entropy_target");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  const std::vector<nlohmann::json> none = train(dir, "none", {"train.steps=20"});
  const std::vector<nlohmann::json> up = train(dir, "up", {"train.steps=20", "rl.entropy_target=2.5"});
  const std::vector<nlohmann::json> down = train(dir, "down", {"train.steps=20", "rl.entropy_target=0.05"});
  const double start = none[0]["entropy_mean"].get<double>();
  CHECK(up[0]["entropy_mean"] == none[0]["entropy_mean"]);  // the same first rollout (coefficient 0)
  CHECK_FALSE(none.back().contains("entropy_coef"));
  for (std::size_t i = 0; i < up.size(); ++i) {  // logged every step: c_1 = 0, then ±Δ per step
    INFO("step " << i + 1);
    REQUIRE(up[i].contains("entropy_coef"));
    if (i > 0)
      CHECK(up[i]["entropy_coef"].get<double>() ==
            rl::next_entropy_coef(up[i - 1]["entropy_coef"].get<double>(), 2.5, 0.05,
                                  up[i - 1]["entropy_mean"].get<double>()));
  }
  const double e_none = last_mean(none, 5), e_up = last_mean(up, 5), e_down = last_mean(down, 5);
  WARN("entropy_mean: start " << start << "; last 5 steps: no target " << e_none << ", target 2.5 " << e_up
                              << ", target 0.05 " << e_down);
  CHECK(e_up > (start + 2.5) / 2);     // at least half way up to the target
  CHECK(e_down < (start + 0.05) / 2);  // at least half way down
  CHECK(e_down < e_none);
  CHECK(e_none < e_up);
  fs::remove_all(dir);
}

TEST_CASE(
    "entropy target: the coefficient is saved with the checkpoint and a resumed run matches, bit for bit",
    "[apps][entropy_target][resume]") {
  const std::string dir = testing::fresh_temp_dir("entropy_target_resume");
  io::write_file_atomic(dir + "/run.yaml", kConfig + "");
  const std::vector<nlohmann::json> full = train(dir, "full", {"train.steps=6", "rl.entropy_target=2.5"});
  train(dir, "half", {"train.steps=3", "rl.entropy_target=2.5"});
  const nlohmann::json state =
      nlohmann::json::parse(io::read_file(dir + "/half/checkpoints/step-000003/state.json"));
  REQUIRE(state.contains("entropy_coef"));
  CHECK(state["entropy_coef"].get<double>() ==
        rl::next_entropy_coef(full[2]["entropy_coef"].get<double>(), 2.5, 0.05,
                              full[2]["entropy_mean"].get<double>()));  // the next step's coefficient
  REQUIRE(call_command({"train", "--resume", dir + "/half", "train.steps=6"}, apps::run_train) == 0);
  const std::vector<nlohmann::json> resumed = metrics_of(dir + "/half");
  REQUIRE(resumed.size() == full.size());
  for (std::size_t i = 0; i < full.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(full[i].dump() == resumed[i].dump());
  }
  CHECK(io::read_file(dir + "/full/checkpoints/step-000006/model.safetensors") ==
        io::read_file(dir + "/half/checkpoints/step-000006/model.safetensors"));
  fs::remove_all(dir);
}
