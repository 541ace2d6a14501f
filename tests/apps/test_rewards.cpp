// External reward functions end to end with the gtpo binary and python3 from PATH: a Python reward trains
// and its metrics appear; a built-in and an external reward add up with their weights; every way a reward
// process can fail stops the run with exit code 1, a message naming the function, the request, the reply
// and its stderr, and a loadable checkpoint of the last completed step from which --resume continues
// exactly as an uninterrupted run. Also: a JSONL row that names its task keeps its verifier.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "data/tasks/registry.h"
#include "model/checkpoint.h"
#include "rl/problem_source.h"
#include "rl/train_state.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"

using namespace gtpo;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const char* kConfig = R"(model:
  architecture: llama
  hidden_size: 32
  num_hidden_layers: 2
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 64
task:
  name: arith
  difficulty: 1
sampler:
  group_size: 4
  max_new_tokens: 16
rl:
  algo: grpo
train:
  prompts_per_step: 3
  checkpoint_every: 0
eval:
  every: 0
  num_problems: 4
  k: 1
log:
  progress: false
)";

// A deterministic reward: the fraction of digits in the completion, "correct" when it has a "####" line,
// components "digits" and "len". With FAIL_MODE set it misbehaves at step FAIL_STEP (2).
const char* kReward = R"PY(import json, math, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
for line in sys.stdin:
    r = json.loads(line)
    c = r["completion"]
    digits = sum(ch.isdigit() for ch in c) / max(1, len(c))
    reply = {"reward": digits, "correct": "####" in c, "components": {"digits": digits, "len": len(r["completion_tokens"])}}
    assert r["row"]["task"] == "arith" and "answer" in r["row"] and r["batch_size"] == 12
    if r["step"] == 2 and r["index"] == 5 and mode != "ok":
        print("reward script: failing on purpose (" + mode + ")", file=sys.stderr, flush=True)
        if mode == "exit": sys.exit(3)
        if mode == "hang": time.sleep(60)
        if mode == "garbage": print("this is not json", flush=True); continue
        if mode == "nan": print('{"reward": NaN}', flush=True); continue
        if mode == "missing": print('{"score": 1.0}', flush=True); continue
    print(json.dumps(reply), flush=True)
)PY";

std::string read(const std::string& path) { return io::read_file(path); }

std::vector<nlohmann::json> metrics(const std::string& run) {
  std::istringstream in(read(run + "/metrics.jsonl"));
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (auto it = j.begin(); it != j.end();) {
      const std::string& k = it.key();
      it = (k.rfind("seconds", 0) == 0 || k.find("per_s") != std::string::npos) ? j.erase(it) : std::next(it);
    }
    out.push_back(j);
  }
  return out;
}

struct Run {
  int code = -1;
  std::string err;
};

// Runs the gtpo binary with ARGS; stderr comes back.
Run gtpo_binary(const std::string& dir, const std::string& args) {
  const std::string binary = std::string(GTPO_BINARY_DIR) + "/gtpo";
  REQUIRE(fs::exists(binary));
  const std::string err_file = dir + "/stderr.txt";
  const int status = std::system((binary + " " + args + " 2> " + err_file).c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read(err_file);
  return r;
}

std::string reward_yaml(const std::string& script, const std::string& mode, double weight_external,
                        const std::string& extra = "") {
  return std::string(kConfig) + "reward:\n  timeout_s: 2\n  functions:\n    - {name: correct, weight: 1}\n" +
         "    - {name: digits, weight: " + std::to_string(weight_external) + ", command: \"python3 " + script + " " +
         mode + "\"}\n" + extra;
}

}  // namespace

TEST_CASE("rewards: an external Python reward trains 3 steps and its metrics appear", "[apps][rewards]") {
  const std::string dir = testing::fresh_temp_dir("reward_python");
  io::write_file_atomic(dir + "/reward.py", kReward);
  io::write_file_atomic(dir + "/run.yaml", reward_yaml(dir + "/reward.py", "ok", 0.5));
  REQUIRE(testing::call_command({"train", dir + "/run.yaml", "train.steps=3", "train.out_dir=" + dir + "/run"},
                                apps::run_train) == 0);
  const std::vector<nlohmann::json> m = metrics(dir + "/run");
  REQUIRE(m.size() == 3);
  for (const nlohmann::json& step : m) {
    INFO(step.dump());
    for (const char* key : {"rewards/correct/mean", "rewards/correct/std", "rewards/digits/mean", "rewards/digits/std",
                            "rewards/digits/digits/mean", "rewards/digits/len/mean", "rewards/digits/len/std"})
      REQUIRE(step.contains(key));
    // The step's reward is the weighted sum: mean r = mean correct + 0.5 · mean digits.
    const double expected = step["rewards/correct/mean"].get<double>() + 0.5 * step["rewards/digits/mean"].get<double>();
    CHECK(std::abs(step["reward_mean"].get<double>() - expected) < 1e-12);
    // The component is what the function returned as its reward.
    CHECK(step["rewards/digits/digits/mean"].get<double>() == step["rewards/digits/mean"].get<double>());
    CHECK(step["rewards/digits/len/mean"].get<double>() > 0.0);
  }
  // The console summary shows them too (log.progress on).
  const Run shown = gtpo_binary(dir, "train " + dir + "/run.yaml train.steps=1 log.progress=true train.out_dir=" + dir +
                                         "/shown sft.steps=0");
  REQUIRE(shown.code == 0);
  CHECK_THAT(shown.err, Contains("rewards: correct "));
  CHECK_THAT(shown.err, Contains(" | digits "));
  fs::remove_all(dir);
}

TEST_CASE("rewards: a built-in and an external reward add up with their weights, and the awk example runs",
          "[apps][rewards]") {
  const std::string dir = testing::fresh_temp_dir("reward_weights");
  const std::string awk = std::string(GTPO_SOURCE_DIR) + "/examples/rewards/has_answer.sh";
  io::write_file_atomic(dir + "/run.yaml", std::string(kConfig) +
                                               "reward:\n  timeout_s: 10\n  functions:\n    - {name: length, weight: 0.25}\n"
                                               "    - {name: answer, weight: 2, command: \"sh " + awk + "\"}\n");
  REQUIRE(testing::call_command({"train", dir + "/run.yaml", "train.steps=3", "train.out_dir=" + dir + "/run",
                                 "train.sample_every=1", "log.samples=4"},
                                apps::run_train) == 0);
  // samples.jsonl carries each response's r_i and every function's own value.
  std::istringstream samples(io::read_file(dir + "/run/samples.jsonl"));
  int sample_lines = 0;
  for (std::string line; std::getline(samples, line); ++sample_lines) {
    const nlohmann::json s = nlohmann::json::parse(line);
    INFO(line.substr(0, 300));
    REQUIRE(s["rewards"].is_object());
    CHECK(s["rewards"].size() == 2);
    const double length = s["rewards"]["length"].get<double>(), answer = s["rewards"]["answer"].get<double>();
    CHECK(length == -static_cast<double>(s["tokens"].size()) / 16.0);
    CHECK((answer == 0.0 || answer == 1.0));
    CHECK(s["reward"].get<double>() == 0.25 * length + 2.0 * answer);
  }
  CHECK(sample_lines == 12);
  const std::vector<nlohmann::json> m = metrics(dir + "/run");
  REQUIRE(m.size() == 3);
  for (const nlohmann::json& step : m) {
    INFO(step.dump());
    const double length = step["rewards/length/mean"].get<double>(), answer = step["rewards/answer/mean"].get<double>();
    CHECK(length < 0.0);
    CHECK(length >= -1.0);
    CHECK(answer >= 0.0);
    CHECK(answer <= 1.0);
    CHECK(std::abs(step["reward_mean"].get<double>() - (0.25 * length + 2.0 * answer)) < 1e-12);
    // No function gives a correct flag: c_i = r_i >= 0.5, which here is exactly "has an answer line".
    CHECK(std::abs(step["accuracy"].get<double>() - answer) < 1e-12);
  }
  fs::remove_all(dir);
}

TEST_CASE("rewards: every failure of a reward process stops the run, loudly, with a checkpoint to resume from",
          "[apps][rewards][resume]") {
  const std::string dir = testing::fresh_temp_dir("reward_fail");
  io::write_file_atomic(dir + "/reward.py", kReward);
  // The uninterrupted run every resumed one must equal.
  io::write_file_atomic(dir + "/ok.yaml", reward_yaml(dir + "/reward.py", "ok", 0.5));
  REQUIRE(gtpo_binary(dir, "train " + dir + "/ok.yaml train.steps=3 train.out_dir=" + dir + "/full").code == 0);
  const std::vector<nlohmann::json> full = metrics(dir + "/full");
  REQUIRE(full.size() == 3);
  const model::LoadedModel full_model = model::load_model(dir + "/full/checkpoints/step-000003");

  const std::pair<const char*, const char*> modes[] = {
      {"exit", "the process ended (exited with status 3) after 5 of 12 replies"},
      {"hang", "no reply within reward.timeout_s = 2 s (got 5 of 12 replies)"},
      {"garbage", "reply 6 of 12: the reply is not JSON"},
      {"nan", "reply 6 of 12: the reply is not JSON"},
      {"missing", "reply 6 of 12: the reply has no \"reward\" field"},
  };
  for (const auto& [mode, reason] : modes) {
    INFO(mode);
    const std::string run = dir + "/" + mode;
    io::write_file_atomic(dir + "/bad.yaml", reward_yaml(dir + "/reward.py", mode, 0.5));
    const Run failed = gtpo_binary(dir, "train " + dir + "/bad.yaml train.steps=3 train.out_dir=" + run);
    CHECK(failed.code == 1);
    CHECK_THAT(failed.err, Contains("reward 'digits' (python3 " + dir + "/reward.py " + mode + "): " + reason));
    CHECK_THAT(failed.err, Contains("\"index\":5"));   // the request it failed on
    CHECK_THAT(failed.err, Contains("\"step\":2"));
    CHECK_THAT(failed.err, Contains("reward script: failing on purpose (" + std::string(mode) + ")"));  // its stderr
    if (std::string(mode) == "garbage") CHECK_THAT(failed.err, Contains("reply: this is not json"));
    if (std::string(mode) == "nan") CHECK_THAT(failed.err, Contains("reply: {\"reward\": NaN}"));
    CHECK_THAT(failed.err, Contains("step 2 stopped before any update"));
    // Step 1 completed and nothing of step 2 was logged or trained on; its checkpoint loads.
    CHECK(metrics(run).size() == 1);
    const auto latest = rl::latest_checkpoint(run);
    REQUIRE(latest.has_value());
    CHECK(fs::path(*latest).filename() == "step-000001");
    CHECK_NOTHROW(model::load_model(*latest));
    // --resume with a working reward restarts the process and continues exactly as the uninterrupted run.
    const Run resumed = gtpo_binary(
        dir, "train --resume " + run + " \"reward.functions[1].command=python3 " + dir + "/reward.py ok\"");
    INFO(resumed.err);
    REQUIRE(resumed.code == 0);
    const std::vector<nlohmann::json> after = metrics(run);
    REQUIRE(after.size() == 3);
    for (size_t i = 0; i < 3; ++i) CHECK(after[i].dump() == full[i].dump());
    const model::LoadedModel b = model::load_model(run + "/checkpoints/step-000003");
    for (const optim::Parameter& p : full_model.model->parameters())
      CHECK(p.tensor.to_vector() == b.model->parameters().get(p.name).to_vector());
  }
  fs::remove_all(dir);
}

TEST_CASE("rewards: a GSM8K dataset's columns reach external rewards, and the GSM8K example runs", "[apps][rewards]") {
  const std::string dir = testing::fresh_temp_dir("reward_gsm8k");
  std::string rows;
  for (int i = 0; i < 6; ++i) {
    const std::string a = std::to_string(i), sum = std::to_string(i + 2);
    rows += "{\"question\": \"What is " + a + " plus 2?\", \"answer\": \"It is " + a + "+2 = <<" + a + "+2=" + sum +
            ">>" + sum + ".\\n#### " + sum + "\", \"bonus\": 0." + std::to_string(i + 1) + "}\n";
  }
  io::write_file_atomic(dir + "/train.jsonl", rows);
  io::write_file_atomic(dir + "/test.jsonl", rows);
  // Returns the row's own "bonus" column: only a row that kept every column can give it.
  io::write_file_atomic(dir + "/bonus.py",
                        "import json, sys\nfor line in sys.stdin:\n    r = json.loads(line)\n"
                        "    print(json.dumps({'reward': r['row']['bonus']}), flush=True)\n");
  const std::string example = std::string(GTPO_SOURCE_DIR) + "/examples/rewards/gsm8k_reward.py";
  io::write_file_atomic(dir + "/run.yaml", std::string(kConfig) + "reward:\n  functions:\n" +
                                               "    - {name: gsm8k, command: \"python3 " + example + "\"}\n" +
                                               "    - {name: bonus, weight: 0, command: \"python3 " + dir + "/bonus.py\"}\n");
  REQUIRE(testing::call_command(
              {"train", dir + "/run.yaml", "train.steps=2", "train.out_dir=" + dir + "/run",
               "task.train_file=" + dir + "/train.jsonl", "task.test_file=" + dir + "/test.jsonl",
               "task.shuffle=false"},  // file order: the bonuses below are by row
              apps::run_train) == 0);
  const std::vector<nlohmann::json> m = metrics(dir + "/run");
  REQUIRE(m.size() == 2);
  // Steps 1 and 2 see rows 0-2 and 3-5 (3 prompts a step, 4 responses each): bonus 0.1..0.3, 0.4..0.6.
  CHECK(std::abs(m[0]["rewards/bonus/mean"].get<double>() - 0.2) < 1e-12);
  CHECK(std::abs(m[1]["rewards/bonus/mean"].get<double>() - 0.5) < 1e-12);
  for (const nlohmann::json& step : m) {
    INFO(step.dump());
    const double match = step["rewards/gsm8k/match/mean"].get<double>(), format = step["rewards/gsm8k/format/mean"].get<double>();
    CHECK(std::abs(step["rewards/gsm8k/mean"].get<double>() - (match + 0.1 * format)) < 1e-12);
    CHECK(std::abs(step["reward_mean"].get<double>() - step["rewards/gsm8k/mean"].get<double>()) < 1e-12);  // weight 0 for bonus
  }
  fs::remove_all(dir);
}

TEST_CASE("rewards: a JSONL row that names its task is judged by that task's verifier", "[apps][rewards]") {
  const std::string dir = testing::fresh_temp_dir("reward_row_task");
  const std::string row =
      R"({"task": "countdown", "prompt": "use 2 3 4 to make 10\n", "answer": "2*3+4", "numbers": [2, 3, 4], "target": 10})"
      "\n";
  io::write_file_atomic(dir + "/train.jsonl", row);
  io::write_file_atomic(dir + "/test.jsonl", row);
  const rl::ProblemSource source = rl::ProblemSource::from_files(dir + "/train.jsonl", dir + "/test.jsonl");
  const data::Problem p = source.train(0);
  CHECK(p.task == "countdown");
  // Another expression that makes the target with the given numbers: only countdown's verifier accepts it.
  CHECK(source.check(p, "#### 4*2+3-1").correct == false);  // 1 is not given
  CHECK(source.check(p, "#### 3*2+4").correct);
  CHECK(source.check(p, "#### 4+3*2").correct);
  CHECK_FALSE(source.check(p, "#### 10").correct);
  fs::remove_all(dir);
}
