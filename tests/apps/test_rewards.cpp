// External reward functions end to end with the gtpo binary and python3 from PATH: a Python reward trains
// and its metrics appear; a built-in and an external reward add up with their weights; every way a reward
// process can fail stops the run with exit code 1, a message naming the function, the request, the reply
// and its stderr, and a loadable checkpoint of the last completed step from which --resume continues
// exactly as an uninterrupted run. Also: a JSONL row that names its task keeps its verifier.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/commands.h"
#include "data/tasks/registry.h"
#include "model/checkpoint.h"
#include "rl/problem_source.h"
#include "rl/run/train_state.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kConfig = testing::tiny_run_yaml({{"sampler.group_size", "4"},
                                                    {"sampler.max_new_tokens", "16"},
                                                    {"rl.algo", "grpo"},
                                                    {"train.prompts_per_step", "3"},
                                                    {"train.checkpoint_every", "0"},
                                                    {"eval.every", "0"},
                                                    {"eval.num_problems", "4"},
                                                    {"eval.k", "1"}});

// A deterministic reward: the fraction of digits in the completion, "correct" when it has a "####" line,
// components "digits" and "len". With FAIL_MODE set it misbehaves at step FAIL_STEP (2).
const char* kReward = R"PY(import json, math, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else "ok"
for line in sys.stdin:
    r = json.loads(line)
    c = r["completion"]
    digits = sum(ch.isdigit() for ch in c) / max(1, len(c))
    reply = {"id": r["id"], "reward": digits, "correct": "####" in c, "components": {"digits": digits, "len": len(r["completion_tokens"])}}
    assert r["row"]["task"] == "arith" and "answer" in r["row"] and r["batch_size"] == 12
    if r["step"] == 2 and r["index"] == (11 if mode == "late" else 5) and mode != "ok":
        print("reward script: failing on purpose (" + mode + ")", file=sys.stderr, flush=True)
        if mode == "exit": sys.exit(3)
        if mode == "hang": time.sleep(60)
        if mode == "garbage": print("this is not json", flush=True); continue
        if mode == "nan": print('{"reward": NaN}', flush=True); continue
        if mode == "missing": print(json.dumps({"id": r["id"], "score": 1.0}), flush=True); continue
        if mode == "huge": print(json.dumps({"id": r["id"], "reward": 1e308}), flush=True); continue
        if mode == "extra": print(json.dumps(reply), flush=True)
        if mode == "late":
            print(json.dumps(reply), flush=True); time.sleep(0.2); print(json.dumps(reply), flush=True); continue
        if mode == "chatty":
            sys.stdout.write("x" * (70 << 20)); sys.stdout.flush(); continue
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
                        const std::string& extra = "", int timeout_s = 2) {
  return std::string(kConfig) + "reward:\n  timeout_s: " + std::to_string(timeout_s) +
         "\n  functions:\n    - {name: correct, weight: 1}\n" +
         "    - {name: digits, weight: " + std::to_string(weight_external) + ", command: \"python3 " +
         script + " " + mode + "\"}\n" + extra;
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

  struct Mode {
    const char* mode;
    const char* reason;
    int step, index;  // the step that fails and the request the message names
  };
  const Mode modes[] = {
      {"exit", "the process ended (exited with status 3) after 5 of 12 replies", 2, 5},
      {"hang", "no reply within reward.timeout_s = 2 s (got 5 of 12 replies)", 2, 5},
      {"garbage", "reply 6 of 12: the reply is not JSON", 2, 5},
      {"nan", "reply 6 of 12: the reply is not JSON", 2, 5},
      {"missing", "reply 6 of 12: the reply has no \"reward\" field", 2, 5},
      {"huge", "reply 6 of 12: \"reward\" is 1e+308, beyond +-1e+12", 2, 5},
      // A line too many, at once or a moment after the batch's last reply: the next reply's id is wrong.
      {"extra", "reply 7 of 12: the reply answers id 18 where id 19 was expected", 2, 6},
      {"late", "reply 1 of 12: the reply answers id 24 where id 25 was expected", 3, 0},
      {"chatty", "it wrote more than 64 MiB without completing the replies", 2, 5},
  };
  for (const auto& [mode, reason, failed_step, failed_index] : modes) {
    INFO(mode);
    const std::string run = dir + "/" + mode;
    // chatty's 70 MiB must reach the 64 MiB limit before the timeout, on a loaded machine too.
    const int timeout_s = std::string(mode) == "chatty" ? 60 : 2;
    io::write_file_atomic(dir + "/bad.yaml", reward_yaml(dir + "/reward.py", mode, 0.5, "", timeout_s));
    const Run failed = gtpo_binary(dir, "train " + dir + "/bad.yaml train.steps=3 train.out_dir=" + run);
    CHECK(failed.code == 1);
    CHECK_THAT(failed.err, Contains("reward 'digits' (python3 " + dir + "/reward.py " + mode + "): " + reason));
    CHECK_THAT(failed.err,
               Contains("\"index\":" + std::to_string(failed_index)));  // the request it failed on
    CHECK_THAT(failed.err, Contains("\"step\":" + std::to_string(failed_step)));
    CHECK_THAT(failed.err, Contains("reward script: failing on purpose (" + std::string(mode) + ")"));  // its stderr
    if (std::string(mode) == "garbage") CHECK_THAT(failed.err, Contains("reply: this is not json"));
    if (std::string(mode) == "nan") CHECK_THAT(failed.err, Contains("reply: {\"reward\": NaN}"));
    CHECK_THAT(failed.err, Contains("step " + std::to_string(failed_step) + " stopped before any update"));
    // The steps before completed and nothing of the failed one was logged or trained on; its checkpoint
    // loads.
    CHECK(metrics(run).size() == static_cast<std::size_t>(failed_step - 1));
    const auto latest = rl::latest_checkpoint(run);
    REQUIRE(latest.has_value());
    CHECK(fs::path(*latest).filename() == "step-00000" + std::to_string(failed_step - 1));
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
                        "    print(json.dumps({'id': r['id'], 'reward': r['row']['bonus']}), flush=True)\n");
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

namespace {
// A reward that starts a background child (sleep) in its process group and records both pids; at step 2 it
// stops answering ("slow"), or exits ("exit").
const char* kLingeringReward = R"PY(import json, os, subprocess, sys, time
d, mode = sys.argv[1], sys.argv[2]
bg = subprocess.Popen(["sleep", "1000"])
with open(d + "/pids", "w") as f: f.write("%d %d\n" % (os.getpid(), bg.pid))
for line in sys.stdin:
    r = json.loads(line)
    if r["step"] == 2 and mode != "ok":
        open(d + "/waiting", "w").close()
        if mode == "slow": time.sleep(1000)
        if mode == "exit": sys.exit(3)
    print(json.dumps({"id": r["id"], "reward": 0.5}), flush=True)
)PY";

// Whether PID is a live process (a zombie, waiting for a parent that may never reap it, is not).
bool alive(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  const std::size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}
}  // namespace

TEST_CASE("rewards: no reward process or child outlives gtpo on any exit path, and a stop ends a long wait",
          "[apps][rewards][signal]") {
  const std::string dir = testing::fresh_temp_dir("reward_lifetime");
  io::write_file_atomic(dir + "/reward.py", kLingeringReward);
  struct Path {
    std::string mode;
    std::vector<int> signals;  // sent once the reward process waits at step 2
    int exit_code;
    int timeout_s = 3600;
  };
  const Path paths[] = {{"ok", {}, 0},
                        {"exit", {}, 1},
                        {"slow", {}, 1, 2},  // reward.timeout_s passes
                        {"slow", {SIGTERM}, 143},
                        {"slow", {SIGINT}, 130},
                        {"slow", {SIGINT, SIGINT}, 130}};
  int n = 0;
  for (const Path& p : paths) {
    const std::string work = dir + "/" + std::to_string(n++);
    INFO(p.mode << " with " << p.signals.size() << " signal(s)");
    fs::create_directories(work);
    io::write_file_atomic(work + "/run.yaml",
                          std::string(kConfig) + "reward:\n  timeout_s: " + std::to_string(p.timeout_s) +
                              "\n  functions:\n" + "    - {name: linger, command: \"python3 " + dir +
                              "/reward.py " + work + " " + p.mode + "\"}\n");
    const pid_t child = testing::spawn_gtpo(
        {"train", work + "/run.yaml", "train.steps=3", "train.out_dir=" + work + "/run"}, work + "/log.txt");
    const auto start = std::chrono::steady_clock::now();
    if (!p.signals.empty()) {
      while (!fs::exists(work + "/waiting") &&
             std::chrono::steady_clock::now() - start < std::chrono::seconds(120))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      REQUIRE(fs::exists(work + "/waiting"));
      for (int s : p.signals) {
        ::kill(child, s);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    const auto signalled = std::chrono::steady_clock::now();
    const int code = testing::wait_exit_code(child);
    INFO(read(work + "/log.txt"));
    CHECK(code == p.exit_code);
    if (!p.signals.empty()) CHECK(std::chrono::steady_clock::now() - signalled < std::chrono::seconds(10));
    std::istringstream pids(read(work + "/pids"));
    int reward_pid = 0, background_pid = 0;
    pids >> reward_pid >> background_pid;
    REQUIRE(background_pid > 0);
    CHECK_FALSE(alive(reward_pid));
    CHECK_FALSE(alive(background_pid));
    if (p.exit_code == 143 || (p.exit_code == 130 && p.signals.size() == 1)) {
      const auto latest = rl::latest_checkpoint(work + "/run");  // a stop writes the last completed step
      REQUIRE(latest.has_value());
      CHECK(fs::path(*latest).filename() == "step-000001");
    }
  }
  fs::remove_all(dir);
}
