// Token rewards end to end with the gtpo binary and python3 from PATH: the request carries token_ids and
// token_texts, a reply's token_rewards (times the weight) reach samples.jsonl and each token's advantage as
// the discounted return-to-go (reward.token_gamma), and a reply with the wrong number of them, a
// non-finite one or none stops the run with a message naming the function, the id and the lengths, and a
// checkpoint from which --resume continues exactly as an uninterrupted run.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/io/atomic_file.h"
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

// 0.1 per token whose text is a digit; the sequence reward is 1 for a "####" line. With a mode it
// misbehaves on request 3 of step 2.
const char* kReward = R"PY(import json, sys
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
for line in sys.stdin:
    r = json.loads(line)
    ids, texts = r["token_ids"], r["token_texts"]
    assert ids == r["completion_tokens"] and len(texts) == len(ids) and all(isinstance(t, str) for t in texts)
    dense = [0.1 if t.isdigit() else 0.0 for t in texts]
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
      CHECK(rho[t] == (digit ? 2 * 0.1 : 0.0));  // weight 2 times the reply's 0.1
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
