// Token rewards end to end with the gtpo binary and python3 from PATH: the request carries token_ids and
// token_texts, a reply's token_rewards (times the weight) reach samples.jsonl and each token's advantage as
// the discounted return-to-go (reward.token_gamma), and a reply with the wrong number of them, a
// non-finite one or none stops the run with a message naming the function, the id and the lengths, and a
// checkpoint from which --resume continues exactly as an uninterrupted run. The report's per-token view
// colours each token by its token reward (read back from the DOM in headless Chromium).
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "runtime/io/atomic_file.h"
#include "tests/support/browser.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kConfig = testing::tiny_run_yaml({{"sampler.group_size", "4"},
                                                    {"sampler.max_new_tokens", "12"},
                                                    {"rl.algo", "grpo"},
                                                    {"train.prompts_per_step", "2"},
                                                    {"train.checkpoint_every", "0"},
                                                    {"train.sample_every", "1"},
                                                    {"log.samples", "8"},
                                                    {"eval.every", "0"}});

// 0.1 per token whose text is a digit, -0.02 per other token; the sequence reward is 1 for a "####" line.
// With a mode it misbehaves on request 3 of step 2.
const char* kReward = R"PY(import json, sys
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
for line in sys.stdin:
    r = json.loads(line)
    ids, texts = r["token_ids"], r["token_texts"]
    assert ids == r["completion_tokens"] and len(texts) == len(ids) and all(isinstance(t, str) for t in texts)
    dense = [0.1 if t.isdigit() else -0.02 for t in texts]
    if r["step"] == 2 and r["index"] == 3:
        if mode == "short": dense = dense[:-1]
        if mode == "inf": dense[0] = float("inf")
    reply = {"id": r["id"], "reward": 1.0 if "####" in r["completion"] else 0.0, "token_rewards": dense}
    if r["step"] == 2 and r["index"] == 3 and mode == "missing": del reply["token_rewards"]
    print(json.dumps(reply), flush=True)
)PY";

std::string yaml(const std::string& script, const std::string& mode) {
  return kConfig + "reward:\n  token_gamma: 0.5\n  timeout_s: 10\n  functions:\n" +
         "    - {name: dense, weight: 2, token_rewards: true, command: \"python3 " + script + " " + mode +
         "\"}\n";
}

int gtpo_binary(const std::string& dir, const std::string& args, std::string& err) {
  const std::string err_file = dir + "/stderr.txt";
  const int status =
      std::system((std::string(GTPO_BINARY_DIR) + "/gtpo " + args + " 2> " + err_file).c_str());
  err = io::read_file(err_file);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::vector<nlohmann::json> lines_of(const std::string& path) {
  std::istringstream in(io::read_file(path));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The report of RUN opened at report.html#selftest&mode=token_reward: the per-token view shows the group it
// opens with (the last logged step's first problem), each token coloured by its logged ρ_t as the page's
// diverging scale does (green rgba(27, 120, 55, a) at or above 0, purple rgba(118, 42, 131, a) below,
// a = 0.06 + 0.8 |ρ_t| / max |ρ| over the group), and a token's hover shows its token reward.
void check_report_view(const std::string& dir, const std::string& run,
                       const std::vector<nlohmann::json>& samples) {
  const std::string chromium = testing::find_chromium();
  if (chromium.empty())
    FAIL("headless Chromium is needed to test the report page (scripts/setup.sh installs it)");
  std::string err, log;
  REQUIRE(gtpo_binary(dir, "report " + run + " --out " + dir + "/report.html", err) == 0);
  const std::string dom =
      testing::selftest_dom(chromium, dir + "/report.html", dir, log, "&mode=token_reward");
  INFO("chromium log:\n" << log);
  CHECK_THAT(log, !Contains("Uncaught"));
  CHECK_THAT(dom, Contains("data-status=\"ok\""));
  CHECK_THAT(dom, Contains("data-selftest-token=\"token-hover-ok\""));
  CHECK_THAT(dom, Contains("token reward ρ_t: -"));  // the scale's label: this mode is the one shown
  CHECK_THAT(dom, Contains("\ntoken reward "));      // the hovered token's read-out
  const int64_t step = samples.back()["step"].get<int64_t>();
  int64_t problem = -1;
  std::vector<double> rho;
  for (const nlohmann::json& s : samples) {
    if (s["step"].get<int64_t>() != step) continue;
    if (problem < 0) problem = s["problem"].get<int64_t>();
    if (s["problem"].get<int64_t>() != problem) continue;
    for (double v : s["token_rewards"].get<std::vector<double>>()) rho.push_back(v);
  }
  double max = 0;
  for (double v : rho) max = std::max(max, std::abs(v));
  const std::vector<std::array<double, 4>> shown = testing::token_colours(dom);
  REQUIRE(shown.size() == rho.size());
  int green = 0, purple = 0;
  for (std::size_t t = 0; t < rho.size(); ++t) {
    INFO("token " << t << ": rho " << rho[t]);
    const std::array<double, 3> want =
        rho[t] >= 0 ? std::array<double, 3>{27, 120, 55} : std::array<double, 3>{118, 42, 131};
    CHECK((shown[t][0] == want[0] && shown[t][1] == want[1] && shown[t][2] == want[2]));
    CHECK(shown[t][3] == Approx(0.06 + 0.8 * std::abs(rho[t]) / max).margin(1e-3));
    (rho[t] >= 0 ? green : purple)++;
  }
  CHECK(purple > 0);  // both signs shown
  WARN("report per-token view: " << rho.size() << " tokens of step " << step << ", problem " << problem
                                 << ": " << green << " green (rho >= 0), " << purple << " purple");
}

}  // namespace

TEST_CASE("token rewards: the reply's values, times the weight, reach samples.jsonl and the advantages",
          "[apps][rewards][token_rewards]") {
  const std::string dir = testing::fresh_temp_dir("token_rewards");
  io::write_file_atomic(dir + "/reward.py", kReward);
  io::write_file_atomic(dir + "/run.yaml", yaml(dir + "/reward.py", "ok"));
  std::string err;
  REQUIRE(gtpo_binary(dir, "train " + dir + "/run.yaml train.steps=2 train.out_dir=" + dir + "/run", err) ==
          0);
  int checked = 0, dense_tokens = 0;
  for (const nlohmann::json& s : lines_of(dir + "/run/samples.jsonl")) {
    INFO(s.dump().substr(0, 400));
    REQUIRE(s.contains("token_rewards"));
    const auto& tokens = s["tokens"];
    const std::vector<double> rho = s["token_rewards"].get<std::vector<double>>();
    const std::vector<double> adv = s["advantages"].get<std::vector<double>>();
    REQUIRE(rho.size() == tokens.size());
    for (std::size_t t = 0; t < rho.size(); ++t) {
      const std::string text = tokens[t].get<std::string>();
      const bool digit = !text.empty() && std::all_of(text.begin(), text.end(), ::isdigit);
      CHECK(rho[t] == (digit ? 2 * 0.1 : 2 * -0.02));  // weight 2 times the reply's value
      dense_tokens += digit;
    }
    if (s["dropped"].get<bool>()) continue;
    // grpo's advantage is one value per response; the credit is ρ_t + 0.5 · credit_{t+1} on top of it.
    const std::size_t n = adv.size();
    const double base = adv[n - 1] - rho[n - 1];
    for (std::size_t t = 0; t + 1 < n; ++t)
      CHECK(adv[t] - base == Approx(rho[t] + 0.5 * (adv[t + 1] - base)).margin(1e-5));
    ++checked;
  }
  CHECK(checked == 16);
  CHECK(dense_tokens > 0);
  check_report_view(dir, dir + "/run", lines_of(dir + "/run/samples.jsonl"));
  fs::remove_all(dir);
}

TEST_CASE("token rewards: a wrong length, a non-finite value or none stops the run, named, resumable",
          "[apps][rewards][token_rewards][resume]") {
  const std::string dir = testing::fresh_temp_dir("token_rewards_fail");
  io::write_file_atomic(dir + "/reward.py", kReward);
  io::write_file_atomic(dir + "/ok.yaml", yaml(dir + "/reward.py", "ok"));
  std::string err;
  REQUIRE(gtpo_binary(dir, "train " + dir + "/ok.yaml train.steps=2 train.out_dir=" + dir + "/full", err) ==
          0);
  const std::string full = io::read_file(dir + "/full/samples.jsonl");
  struct Mode {
    const char* mode;
    const char* reason;
  };
  // Request 3 of step 2 is id 12 (8 requests a step).
  for (const auto& [mode, reason] :
       {Mode{"short", "reply 4 of 8: the reply to id 12 gives "},
        Mode{"inf", "reply 4 of 8: the reply is not JSON"},
        Mode{"missing", "reply 4 of 8: the reply to id 12 has no \"token_rewards\""}}) {
    INFO(mode);
    io::write_file_atomic(dir + "/bad.yaml", yaml(dir + "/reward.py", mode));
    const std::string run = dir + "/" + mode;
    CHECK(gtpo_binary(dir, "train " + dir + "/bad.yaml train.steps=2 train.out_dir=" + run, err) == 1);
    CHECK_THAT(err, Contains("reward 'dense' (python3 " + dir + "/reward.py " + mode + "): " + reason));
    if (std::string(mode) == "short") CHECK_THAT(err, Contains("token_rewards for a completion of "));
    CHECK_THAT(err, Contains("step 2 stopped before any update"));
    REQUIRE(fs::exists(run + "/checkpoints/step-000001"));
    if (std::string(mode) != "short") continue;
    REQUIRE(gtpo_binary(
                dir,
                "train --resume " + run + " \"reward.functions[0].command=python3 " + dir + "/reward.py ok\"",
                err) == 0);
    CHECK(io::read_file(run + "/samples.jsonl") == full);
  }
  fs::remove_all(dir);
}
