// A run directory belongs to one run, non-finite numbers stop every phase, sizes are checked where they are
// read, the parts of a run are checked against each other before any work, and SIGINT/SIGTERM stop SFT or RL
// after the current step with a resumable checkpoint.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/commands.h"
#include "data/tasks/registry.h"
#include "model/checkpoint.h"
#include "rl/non_finite.h"
#include "rl/problem_source.h"
#include "rl/run/train_state.h"
#include "rl/run_config.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "runtime/io/safetensors.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Contains;
using testing::call_command;
namespace fs = std::filesystem;

namespace {
const std::string kConfig = testing::tiny_run_yaml({{"sampler.group_size", "2"},
                                                    {"sampler.max_new_tokens", "12"},
                                                    {"rl.algo", "grpo"},
                                                    {"rl.dynamic_sampling", "false"},
                                                    {"sft.steps", "2"},
                                                    {"sft.batch_size", "4"},
                                                    {"train.steps", "2"},
                                                    {"train.prompts_per_step", "2"},
                                                    {"train.checkpoint_every", "1"},
                                                    {"eval.every", "0"},
                                                    {"eval.num_problems", "4"},
                                                    {"eval.k", "1"}});

std::string setup(const std::string& name) {
  const std::string dir = testing::fresh_temp_dir(name);
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  return dir;
}

int count_lines_with_step(const std::string& path, int64_t step) {
  std::istringstream in(io::read_file(path));
  std::string line;
  int n = 0;
  while (std::getline(in, line))
    if (nlohmann::json::parse(line).value("step", int64_t{-1}) == step) ++n;
  return n;
}

std::vector<std::vector<float>> weights_of(const std::string& dir) {
  model::LoadedModel m = model::load_model(dir);
  std::vector<std::vector<float>> out;
  for (const optim::Parameter& p : m.model->parameters()) out.push_back(p.tensor.to_vector());
  return out;
}

std::string read_log(const std::string& path) { return fs::exists(path) ? io::read_file(path) : ""; }

// Waits (up to 2 minutes) until a running gtpo has written a line to the log at PATH.
void wait_for_first_line(const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline && read_log(path).empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}
}  // namespace

TEST_CASE("run dir: train refuses a non-empty out_dir, --overwrite starts over, logs are never mixed",
          "[apps][run-dir]") {
  const std::string dir = setup("run_dir");
  const std::string run = dir + "/run", out = "train.out_dir=" + run;
  REQUIRE(call_command({"train", dir + "/run.yaml", out}, apps::run_train) == 0);
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", out, "rl.algo=gtpo"}, apps::run_train),
                    Contains("not empty") && Contains("--resume") && Contains("--overwrite"));
  CHECK_THROWS_WITH(call_command({"train", "--resume", run, "--overwrite"}, apps::run_train), Contains("one of them"));
  // --overwrite: a new run with a different algorithm; nothing of the old one is left to be mistaken for it.
  REQUIRE(call_command({"train", dir + "/run.yaml", out, "rl.algo=gtpo", "train.steps=1", "--overwrite"},
                       apps::run_train) == 0);
  CHECK(count_lines_with_step(run + "/eval.jsonl", 0) == 1);
  CHECK(rl::load_run_config(run + "/config.yaml").rl.algo == "gtpo");
  CHECK_FALSE(fs::exists(run + "/checkpoints/step-000002"));
  CHECK(fs::path(*rl::latest_checkpoint(run)).filename() == "step-000001");
  // --overwrite never removes what is not a run file.
  io::write_file_atomic(run + "/notes.txt", "mine");
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", out, "--overwrite"}, apps::run_train),
                    Contains("notes.txt") && Contains("nothing was removed"));
  CHECK(fs::exists(run + "/config.yaml"));
  fs::remove_all(dir);
}

TEST_CASE("run dir: a checkpoint of the same step is rewritten, never skipped", "[apps][run-dir]") {
  const std::string dir = setup("same_step");
  io::write_file_atomic(dir + "/model.yaml", "model:\n  architecture: gpt2\n  vocab_size: 260\n  hidden_size: 32\n"
                                             "  num_hidden_layers: 1\n  num_attention_heads: 4\n  max_position_embeddings: 32\n");
  REQUIRE(call_command({"init", dir + "/model.yaml", "train.seed=1", "--out", dir + "/a"}, apps::run_init) ==
          0);
  REQUIRE(call_command({"init", dir + "/model.yaml", "train.seed=2", "--out", dir + "/b"}, apps::run_init) ==
          0);
  model::LoadedModel a = model::load_model(dir + "/a"), b = model::load_model(dir + "/b");
  optim::AdamW opt(a.model->parameters());
  rl::TrainProgress progress;
  progress.step = 3;
  rl::save_train_checkpoint(dir + "/run", *a.model, *a.tokenizer, opt.full_state(), nullptr, progress, "");
  rl::save_train_checkpoint(dir + "/run", *b.model, *b.tokenizer, opt.full_state(), nullptr, progress, "");
  CHECK(weights_of(*rl::latest_checkpoint(dir + "/run")) == weights_of(dir + "/b"));
  // init --out replaces a checkpoint but nothing else.
  fs::create_directories(dir + "/other");
  io::write_file_atomic(dir + "/other/data.csv", "1,2");
  CHECK_THROWS_WITH(call_command({"init", dir + "/model.yaml", "--out", dir + "/other"}, apps::run_init),
                    Contains("data.csv") && Contains("not a checkpoint file"));
  CHECK(fs::exists(dir + "/other/data.csv"));
  // No command but the trainer replaces a training checkpoint: its state is what --resume continues from.
  const std::string step = *rl::latest_checkpoint(dir + "/run");
  const auto files_of = [](const std::string& d) {
    std::map<std::string, std::string> out;
    for (const auto& e : fs::directory_iterator(d))
      out[e.path().filename().string()] = io::read_file(e.path().string());
    return out;
  };
  const auto before = files_of(step);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"init", dir + "/model.yaml", "--out", step},
        std::vector<std::string>{"export", dir + "/a", "--out", step}}) {
    INFO(command[0] << " --out " << step);
    CHECK_THROWS_WITH(call_command(command, command[0] == "init" ? apps::run_init : apps::run_export),
                      Contains(step) && Contains("training checkpoint") && Contains("not replacing it"));
  }
  // export --out of the checkpoint itself, a model checkpoint included.
  CHECK_THROWS_WITH(call_command({"export", step, "--out", step, "--dtype", "bf16"}, apps::run_export),
                    Contains("is the checkpoint being exported"));
  CHECK(files_of(step) == before);
  CHECK_THROWS_WITH(call_command({"export", dir + "/a", "--out", dir + "/a/"}, apps::run_export),
                    Contains("is the checkpoint being exported"));
  fs::remove_all(dir);
}

TEST_CASE("non-finite: SFT, RL and checkpoints with NaN stop with the step, the quantity and the last checkpoint",
          "[apps][non-finite]") {
  const std::string dir = setup("non_finite");
  // gtpo sft: the error names the step and the quantity; --out is not written.
  CHECK_THROWS_WITH(call_command({"sft", dir + "/run.yaml", "sft.lr=1e30", "train.out_dir=" + dir + "/s", "--out",
                                  dir + "/sft"},
                                 apps::run_sft),
                    Contains("sft step") && Contains("non-finite") && Contains("no checkpoint was written"));
  CHECK_FALSE(fs::exists(dir + "/sft"));
  // gtpo train, SFT phase: nothing saved, no checkpoint yet.
  CHECK_THROWS_WITH(
      call_command({"train", dir + "/run.yaml", "sft.lr=1e30", "train.out_dir=" + dir + "/t1"}, apps::run_train),
      Contains("sft step") && Contains("last good checkpoint: none"));
  CHECK_FALSE(rl::latest_checkpoint(dir + "/t1").has_value());
  // Evaluation: an SFT update that leaves huge weights gives NaN logits, found by the evaluation before RL.
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", "sft.lr=1e30", "sft.weight_decay=0.5", "sft.steps=1",
                                  "sft.warmup_steps=0", "train.out_dir=" + dir + "/t3"},
                                 apps::run_train),
                    Contains("eval at RL step 0") && Contains("non-finite") && Contains("last good checkpoint: none"));
  // RL phase: the last good checkpoint is named and is the latest; no NaN checkpoint is written.
  try {
    call_command({"train", dir + "/run.yaml", "optim.lr=1e30", "optim.weight_decay=0.5", "train.steps=6",
                  "train.out_dir=" + dir + "/t2"},
                 apps::run_train);
    FAIL("expected a non-finite error");
  } catch (const rl::NonFiniteError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("rl step") != std::string::npos);
    CHECK(msg.find("last good checkpoint: ") != std::string::npos);
    const auto latest = rl::latest_checkpoint(dir + "/t2");
    if (latest) {
      CHECK(msg.find(*latest) != std::string::npos);
      CHECK_NOTHROW(model::load_model(*latest));  // finite, or it would not load
    }
  }
  // A checkpoint with a NaN weight does not load; the error names the tensor.
  REQUIRE(call_command({"init", dir + "/run.yaml", "model.vocab_size=260", "--out", dir + "/ok"}, apps::run_init) == 0);
  model::LoadedModel m = model::load_model(dir + "/ok");
  io::SafetensorsWriter w;
  for (const optim::Parameter& p : m.model->parameters()) {
    std::vector<float> v = p.tensor.to_vector();
    if (p.name == "model.norm.weight") v[1] = std::nanf("");
    w.add_f32(p.name, p.tensor.shape().dims(), v);
  }
  w.write(dir + "/ok/model.safetensors");
  fs::remove(dir + "/ok/" + io::kDigestFile);  // the check beneath the digests, which caught the edit first
  CHECK_THROWS_WITH(model::load_model(dir + "/ok"), Contains("model.norm.weight") && Contains("non-finite"));
  fs::remove_all(dir);
}

TEST_CASE("sizes and consistency: checked where read and before any work, naming the key", "[apps][checks]") {
  const std::string dir = setup("checks");
  const std::string out = "train.out_dir=" + dir + "/run";
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", out, "train.prompts_per_step=2000000000"}, apps::run_train),
                    Contains("train.prompts_per_step"));
  // Attention as wide as num_attention_heads x head_dim, not hidden_size: counted before allocating (this
  // one is 8 TiB of q/k/v/o weights with hidden_size 32).
  CHECK_THROWS_WITH(
      call_command({"train", dir + "/run.yaml", out, "model.head_dim=1048576",
                    "model.num_attention_heads=4096", "model.num_key_value_heads=4096"},
                   apps::run_train),
      Contains("weights alone need") && Contains("head_dim 1048576") && Contains("num_attention_heads 4096"));
  CHECK_THROWS_WITH(
      call_command({"train", dir + "/run.yaml", out, "train.prompts_per_step=1000000", "sampler.group_size=65536"},
                   apps::run_train),
      Contains("train.prompts_per_step") && Contains("sampler.group_size") && Contains("memory"));
  // Prompt + max_new_tokens beyond the context: found at setup (no SFT log yet), naming the keys.
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", out, "sampler.max_new_tokens=60"}, apps::run_train),
                    Contains("longest prompt") && Contains("sampler.max_new_tokens") &&
                        Contains("model.max_position_embeddings"));
  CHECK_FALSE(fs::exists(dir + "/run/sft.jsonl"));
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", out, "eval.max_new_tokens=63"}, apps::run_train),
                    Contains("eval.max_new_tokens"));
  // A vocabulary that does not fit the model: both sizes named.
  CHECK_THROWS_WITH(call_command({"train", dir + "/run.yaml", out, "model.vocab_size=5"}, apps::run_train),
                    Contains("model.vocab_size is 5") && Contains("tokens"));
  // Model sizes whose weights cannot fit: the keys named, before any allocation.
  CHECK_THROWS_WITH(call_command({"init", dir + "/run.yaml", "model.vocab_size=260", "model.num_hidden_layers=100000000",
                                  "--out", dir + "/huge"},
                                 apps::run_init),
                    Contains("num_hidden_layers 100000000") && Contains("memory"));
  // sample: -n and --seed.
  REQUIRE(call_command({"init", dir + "/run.yaml", "model.vocab_size=260", "--out", dir + "/ckpt"}, apps::run_init) == 0);
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "1+1=", "-n", "100000000000"},
                                 apps::run_sample),
                    Contains("-n"));
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "1+1=", "--seed", "-1"},
                                 apps::run_sample),
                    Contains("--seed"));
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "1", "--max-new-tokens", "64"},
                                 apps::run_sample),
                    Contains("--max-new-tokens"));
  fs::remove_all(dir);
}

TEST_CASE("eval, sample, score: a run directory brings its checkpoint and its run config", "[apps][eval]") {
  const std::string dir = setup("eval_run");
  const std::string run = dir + "/run";
  // difficulty 1 is not arith's default: eval must use the run's option to match the run's own evaluation.
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.out_dir=" + run}, apps::run_train) == 0);
  std::istringstream in(io::read_file(run + "/eval.jsonl"));
  std::string line, last;
  while (std::getline(in, line)) last = line;
  const double run_accuracy = nlohmann::json::parse(last).at("greedy_accuracy").get<double>();
  for (const std::vector<std::string>& how : {std::vector<std::string>{}, std::vector<std::string>{"--task", "arith"}}) {
    std::vector<std::string> args = {"eval", "--checkpoint", run, "--out", dir + "/records.jsonl", "--threads", "1"};
    args.insert(args.end(), how.begin(), how.end());
    REQUIRE(call_command(args, apps::run_eval) == 0);
    std::istringstream records(io::read_file(dir + "/records.jsonl"));
    int n = 0, correct = 0;
    while (std::getline(records, line)) {
      ++n;
      correct += nlohmann::json::parse(line).at("greedy_correct").get<bool>();
    }
    CHECK(n == 4);  // the run's eval.num_problems
    CHECK(static_cast<double>(correct) / n == run_accuracy);
    // The problems are the run's (arith with difficulty 1), not arith's defaults.
    std::istringstream again(io::read_file(dir + "/records.jsonl"));
    std::getline(again, line);
    const std::string prompt = nlohmann::json::parse(line).at("prompt").get<std::string>();
    const auto with_options = rl::ProblemSource::from_task(data::make_task("arith", {{"difficulty", "1"}}), 0);
    const auto defaults = rl::ProblemSource::from_task(data::make_task("arith", {}), 0);
    CHECK(prompt == with_options.test(0).prompt);
    CHECK(prompt != defaults.test(0).prompt);
  }
  CHECK(call_command({"sample", "--checkpoint", run, "--prompt", "1+2=", "--threads", "1"}, apps::run_sample) == 0);
  io::write_file_atomic(dir + "/in.jsonl", "{\"tokens\": [1, 2, 3], \"prompt_len\": 1}\n");
  CHECK(call_command({"score", "--checkpoint", run, "--in", dir + "/in.jsonl", "--out", dir + "/o.jsonl", "--threads", "2"},
                     apps::run_score) == 0);
  // Every command names a checkpoint alike: RUN/checkpoints/latest itself, and a run directory for
  // train.init_from and tokenize --tokenizer.
  CHECK(call_command(
            {"sample", "--checkpoint", run + "/checkpoints/latest", "--prompt", "1+2=", "--threads", "1"},
            apps::run_sample) == 0);
  CHECK(call_command({"tokenize", "--tokenizer", run, "--text", "1+2="}, apps::run_tokenize) == 0);
  CHECK(call_command({"train", dir + "/run.yaml", "train.init_from=" + run, "sft.steps=0", "train.steps=1",
                      "train.out_dir=" + dir + "/from_run"},
                     apps::run_train) == 0);
  CHECK(call_command({"train", dir + "/run.yaml", "train.init_from=" + run + "/checkpoints/latest",
                      "sft.steps=0", "train.steps=1", "train.out_dir=" + dir + "/from_latest"},
                     apps::run_train) == 0);
  fs::remove_all(dir);
}

TEST_CASE("run dir: a second process on a run directory is refused, and a killed one releases it",
          "[apps][run-dir]") {
  const std::string dir = setup("run_lock");
  const std::string run = dir + "/run", log = dir + "/log.txt";
  const pid_t first =
      testing::spawn_gtpo({"train", dir + "/run.yaml", "train.out_dir=" + run, "sft.steps=100000",
                           "train.steps=0", "sft.schedule=constant", "sft.warmup_steps=0"},
                          log);
  wait_for_first_line(run + "/sft.jsonl");
  REQUIRE_FALSE(read_log(run + "/sft.jsonl").empty());
  // While it trains: a resume, an overwrite and a fresh start there are refused, naming the holder.
  const std::string holder = "(pid " + std::to_string(first);
  CHECK_THROWS_WITH(call_command({"train", "--resume", run}, apps::run_train),
                    Contains("is in use by another gtpo process") && Contains(holder));
  CHECK_THROWS_WITH(
      call_command({"train", dir + "/run.yaml", "train.out_dir=" + run, "--overwrite"}, apps::run_train),
      Contains("is in use by another gtpo process") && Contains(holder));
  CHECK(fs::exists(run + "/sft.jsonl"));  // --overwrite removed nothing
  ::kill(first, SIGKILL);
  CHECK(testing::wait_exit_code(first) == 128 + SIGKILL);
  // The kernel released the lock with the process: the run continues (and its newest checkpoint loads).
  if (rl::latest_checkpoint(run)) {
    CHECK(call_command({"train", "--resume", run, "sft.steps=1", "train.steps=0"}, apps::run_train) == 0);
  } else {
    CHECK(call_command({"train", dir + "/run.yaml", "train.out_dir=" + run, "--overwrite", "sft.steps=1",
                        "train.steps=0"},
                       apps::run_train) == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE(
    "run dir: a log that cannot be written stops the run with the file, the reason and a loadable checkpoint",
    "[apps][run-dir]") {
  // A full disk, as a file-size limit (sh's ulimit -f counts 512-byte blocks; gtpo ignores SIGXFSZ, which
  // would otherwise kill it without a word, exit 153): writes past 500 KiB fail with EFBIG, as they fail with
  // ENOSPC on a full disk. samples.jsonl, logging every token of
  // 16 responses a step, gets there first, while each checkpoint file stays under the limit.
  const std::string dir = setup("log_write_error");
  const std::string run = dir + "/run";
  const auto r =
      testing::run_shell("ulimit -f 1000; OMP_WAIT_POLICY=passive exec timeout 300 " +
                         testing::gtpo_binary() + " train " + dir + "/run.yaml train.out_dir=" + run +
                         " sft.steps=0 train.steps=1000 sampler.group_size=4 train.prompts_per_step=4 "
                         "train.sample_every=1 log.samples=16");
  INFO(r.output);
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Contains("cannot append to " + run + "/samples.jsonl") && Contains("File too large") &&
                           Contains("last checkpoint: " + run + "/checkpoints/step-"));
  const auto latest = rl::latest_checkpoint(run);
  REQUIRE(latest.has_value());
  CHECK_THAT(r.output, Contains("last checkpoint: " + *latest));
  CHECK_NOTHROW(model::load_model(*latest));
  // Once the logs can be written, the run continues from there.
  const rl::TrainProgress p = rl::read_train_progress(*latest);
  CHECK(call_command({"train", "--resume", run, "train.steps=" + std::to_string(p.step + 1)},
                     apps::run_train) == 0);
  CHECK(count_lines_with_step(run + "/metrics.jsonl", p.step + 1) == 1);
  fs::remove_all(dir);
}

TEST_CASE("signals: SIGTERM during SFT ends the step, checkpoints, exits 143, and --resume continues bit for bit",
          "[apps][signal]") {
  const std::string dir = setup("sigterm_sft");
  const std::string run = dir + "/run", log = dir + "/log.txt";
  const std::vector<std::string> common = {"sft.schedule=constant", "sft.warmup_steps=0", "train.steps=0"};
  std::vector<std::string> args = {"train", dir + "/run.yaml", "train.out_dir=" + run, "sft.steps=100000"};
  args.insert(args.end(), common.begin(), common.end());
  const pid_t child = testing::spawn_gtpo(args, log);
  wait_for_first_line(run + "/sft.jsonl");
  ::kill(child, SIGTERM);
  CHECK(testing::wait_exit_code(child) == 143);
  const std::string output = read_log(log);
  INFO(output);
  CHECK(output.find("stopped by SIGTERM") != std::string::npos);
  CHECK(output.find("not measured") != std::string::npos);
  CHECK(output.find("after RL") == std::string::npos);
  CHECK(output.find("--resume") != std::string::npos);
  CHECK(read_log(run + "/eval.jsonl").empty());
  const auto latest = rl::latest_checkpoint(run);
  REQUIRE(latest.has_value());
  CHECK_NOTHROW(model::load_model(*latest));
  const rl::TrainProgress p = rl::read_train_progress(*latest);
  CHECK_FALSE(p.sft_done);
  REQUIRE(p.sft_step >= 1);
  // Resume to two steps past the stop; an uninterrupted run of that many SFT steps gives the same weights.
  const std::string total = "sft.steps=" + std::to_string(p.sft_step + 2);
  REQUIRE(call_command({"train", "--resume", run, total}, apps::run_train) == 0);
  args = {"train", dir + "/run.yaml", "train.out_dir=" + dir + "/straight", total};
  args.insert(args.end(), common.begin(), common.end());
  REQUIRE(call_command(args, apps::run_train) == 0);
  CHECK(weights_of(*rl::latest_checkpoint(run)) == weights_of(*rl::latest_checkpoint(dir + "/straight")));
  CHECK(count_lines_with_step(run + "/sft.jsonl", p.sft_step + 1) == 1);
  fs::remove_all(dir);
}

TEST_CASE("signals: SIGINT during gtpo sft writes the steps done, skips the evaluation, exits 130", "[apps][signal]") {
  const std::string dir = setup("sigint_sft");
  const std::string log = dir + "/log.txt";
  const pid_t child = testing::spawn_gtpo(
      {"sft", dir + "/run.yaml", "train.out_dir=" + dir + "/run", "sft.steps=100000", "--out", dir + "/ckpt"}, log);
  wait_for_first_line(dir + "/run/sft.jsonl");
  ::kill(child, SIGINT);
  CHECK(testing::wait_exit_code(child) == 130);
  const std::string output = read_log(log);
  INFO(output);
  CHECK(output.find("stopped by SIGINT") != std::string::npos);
  CHECK(output.find("not measured") != std::string::npos);
  CHECK_NOTHROW(model::load_model(dir + "/ckpt"));
  fs::remove_all(dir);
}

TEST_CASE("signals: SIGINT during RL ends the step, exits 130 and reports no after-RL accuracy", "[apps][signal]") {
  const std::string dir = setup("sigint_rl");
  const std::string run = dir + "/run", log = dir + "/log.txt";
  const pid_t child =
      testing::spawn_gtpo({"train", dir + "/run.yaml", "train.out_dir=" + run, "train.steps=100000",
                           "train.checkpoint_every=0", "sft.steps=0", "log.progress=true"},
                          log);
  wait_for_first_line(run + "/metrics.jsonl");
  ::kill(child, SIGINT);
  CHECK(testing::wait_exit_code(child) == 130);
  const std::string output = read_log(log);
  INFO(output);
  CHECK(output.find("stopped by SIGINT after ") != std::string::npos);
  CHECK(output.find(" of 100000 RL steps") != std::string::npos);
  CHECK(output.find("SFT steps") == std::string::npos);  // no "0 of 0 SFT steps" in a run without SFT
  CHECK(output.find("not measured after RL") != std::string::npos);
  CHECK(output.find("checkpoint: ") == output.rfind("checkpoint: "));  // printed once
  CHECK(output.find("wall time: ") != std::string::npos);
  const auto latest = rl::latest_checkpoint(run);
  REQUIRE(latest.has_value());
  const rl::TrainProgress p = rl::read_train_progress(*latest);
  CHECK(p.step >= 1);
  REQUIRE(call_command({"train", "--resume", run, "train.steps=" + std::to_string(p.step + 1)}, apps::run_train) == 0);
  CHECK(rl::read_train_progress(*rl::latest_checkpoint(run)).step == p.step + 1);
  fs::remove_all(dir);
}
