// gtpo train end to end on a tiny model: resume continues bit for bit, SIGINT writes a final checkpoint,
// and a checkpoint write killed half-way leaves the previous one loadable.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "apps/commands.h"
#include "model/checkpoint.h"
#include "rl/run/train_state.h"
#include "rl/run_config.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using testing::call_command;
namespace fs = std::filesystem;

namespace {
const std::string kConfig = testing::tiny_run_yaml({{"sampler.group_size", "4"},
                                                    {"sampler.max_new_tokens", "16"},
                                                    {"rl.algo", "gtpo"},
                                                    {"rl.dynamic_sampling", "false"},
                                                    {"sft.steps", "3"},
                                                    {"sft.batch_size", "8"},
                                                    {"train.prompts_per_step", "3"},
                                                    {"train.checkpoint_every", "2"},
                                                    {"train.sample_every", "1"},
                                                    {"eval.every", "2"},
                                                    {"eval.num_problems", "6"},
                                                    {"eval.k", "2"}});

// metrics.jsonl without the wall-clock fields, which no two runs share.
std::vector<nlohmann::json> deterministic_metrics(const std::string& run) {
  std::istringstream in(io::read_file(run + "/metrics.jsonl"));
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json j = nlohmann::json::parse(line);
    for (auto it = j.begin(); it != j.end();) {
      const std::string& k = it.key();
      if (k.rfind("seconds", 0) == 0 || k.find("per_s") != std::string::npos)
        it = j.erase(it);
      else
        ++it;
    }
    out.push_back(j);
  }
  return out;
}
}  // namespace

TEST_CASE("train: N steps + resume + N steps equals 2N steps, bit for bit", "[apps][train][resume]") {
  const std::string dir = testing::fresh_temp_dir("train_resume");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=4", "train.out_dir=" + dir + "/full"}, apps::run_train) == 0);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "train.out_dir=" + dir + "/half"}, apps::run_train) == 0);
  REQUIRE(call_command({"train", "--resume", dir + "/half", "train.steps=4"}, apps::run_train) == 0);
  std::vector<nlohmann::json> full = deterministic_metrics(dir + "/full"), resumed = deterministic_metrics(dir + "/half");
  REQUIRE(full.size() == 4);
  REQUIRE(resumed.size() == 4);
  for (size_t i = 0; i < full.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(full[i].dump() == resumed[i].dump());
  }
  // The final weights agree too.
  model::LoadedModel a = model::load_model(dir + "/full/checkpoints/step-000004");
  model::LoadedModel b = model::load_model(dir + "/half/checkpoints/step-000004");
  for (const optim::Parameter& p : a.model->parameters())
    CHECK(p.tensor.to_vector() == b.model->parameters().get(p.name).to_vector());
  fs::remove_all(dir);
}

// The step-NNNNNN directories (and anything else) under RUN/checkpoints, sorted.
std::vector<std::string> checkpoint_entries(const std::string& run) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(run + "/checkpoints")) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_CASE("train: keep_checkpoints keeps the newest N, and a resumed run still matches", "[apps][train][checkpoint]") {
  const std::string dir = testing::fresh_temp_dir("train_keep");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  const std::vector<std::string> keep2 = {"train.checkpoint_every=1", "train.keep_checkpoints=2"};
  auto train = [&](std::vector<std::string> args) {
    args.insert(args.end(), keep2.begin(), keep2.end());
    return call_command(args, apps::run_train);
  };
  REQUIRE(train({"train", dir + "/run.yaml", "train.steps=5", "train.out_dir=" + dir + "/full"}) == 0);
  CHECK(checkpoint_entries(dir + "/full") == std::vector<std::string>{"latest", "step-000004", "step-000005"});

  // A kill during a deletion leaves a *.deleting directory; the next save removes it.
  REQUIRE(train({"train", dir + "/run.yaml", "train.steps=3", "train.out_dir=" + dir + "/half"}) == 0);
  CHECK(checkpoint_entries(dir + "/half") == std::vector<std::string>{"latest", "step-000002", "step-000003"});
  fs::create_directories(dir + "/half/checkpoints/step-000001.deleting");
  io::write_file_atomic(dir + "/half/checkpoints/step-000001.deleting/model.safetensors", "partial");
  REQUIRE(call_command({"train", "--resume", dir + "/half", "train.steps=5"}, apps::run_train) == 0);
  CHECK(checkpoint_entries(dir + "/half") == std::vector<std::string>{"latest", "step-000004", "step-000005"});
  std::vector<nlohmann::json> full = deterministic_metrics(dir + "/full"), resumed = deterministic_metrics(dir + "/half");
  REQUIRE(full.size() == 5);
  REQUIRE(resumed.size() == 5);
  for (size_t i = 0; i < full.size(); ++i) CHECK(full[i].dump() == resumed[i].dump());

  // The checkpoint `latest` names is never deleted, even when it is not the newest step.
  fs::rename(dir + "/half/checkpoints/step-000005", dir + "/half/checkpoints/step-000001");
  io::write_file_atomic(dir + "/half/checkpoints/latest", "step-000001\n");
  rl::prune_checkpoints(dir + "/half", 1);
  CHECK(checkpoint_entries(dir + "/half") == std::vector<std::string>{"latest", "step-000001", "step-000004"});
  rl::prune_checkpoints(dir + "/half", 2);
  CHECK(checkpoint_entries(dir + "/half") == std::vector<std::string>{"latest", "step-000001", "step-000004"});
  CHECK_THROWS_WITH(rl::prune_checkpoints(dir + "/half", 0), Catch::Contains("at least 1"));
  fs::remove_all(dir);
}

TEST_CASE("train: a half-written checkpoint leaves the previous one loadable", "[apps][train][checkpoint]") {
  const std::string dir = testing::fresh_temp_dir("train_killed");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "train.out_dir=" + dir + "/run"}, apps::run_train) == 0);
  // A kill during the next checkpoint leaves its temporary directory behind, half written.
  const std::string partial = dir + "/run/checkpoints/step-000003.tmp";
  fs::create_directories(partial);
  io::write_file_atomic(partial + "/model.safetensors", "\x10\x00\x00");
  auto latest = rl::latest_checkpoint(dir + "/run");
  REQUIRE(latest.has_value());
  CHECK(fs::path(*latest).filename() == "step-000002");
  CHECK_NOTHROW(model::load_model(*latest));
  REQUIRE(call_command({"train", "--resume", dir + "/run", "train.steps=3"}, apps::run_train) == 0);
  CHECK(fs::path(*rl::latest_checkpoint(dir + "/run")).filename() == "step-000003");
  fs::remove_all(dir);
}

TEST_CASE("train: SIGINT stops after the current step with a final checkpoint", "[apps][train][signal]") {
  const std::string dir = testing::fresh_temp_dir("train_sigint");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  const std::string binary = std::string(GTPO_BINARY_DIR) + "/gtpo";
  REQUIRE(fs::exists(binary));
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const std::string out = "train.out_dir=" + dir + "/run";
    execl(binary.c_str(), binary.c_str(), "train", (dir + "/run.yaml").c_str(), "train.steps=100000",
          "train.checkpoint_every=0", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait for the first RL step, then interrupt.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (std::chrono::steady_clock::now() < deadline) {
    if (fs::exists(dir + "/run/metrics.jsonl") && fs::file_size(dir + "/run/metrics.jsonl") > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(child, SIGINT);
  int status = 0;
  waitpid(child, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  auto latest = rl::latest_checkpoint(dir + "/run");
  REQUIRE(latest.has_value());
  CHECK_NOTHROW(model::load_model(*latest));
  fs::remove_all(dir);
}

TEST_CASE(
    "train: eval.final_problems and final_sampled_problems size the evaluation after the last step only",
    "[apps][train][eval]") {
  const std::string dir = testing::fresh_temp_dir("train_final_eval");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command(
              {"train", dir + "/run.yaml", "train.steps=2", "eval.every=1", "eval.num_problems=3",
               "eval.final_problems=9", "eval.final_sampled_problems=4", "train.out_dir=" + dir + "/run"},
              apps::run_train) == 0);
  std::istringstream in(io::read_file(dir + "/run/eval.jsonl"));
  std::vector<std::pair<int64_t, int64_t>> sizes;  // (problems, sampled_problems) per evaluation
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    sizes.emplace_back(j.at("problems").get<int64_t>(), j.at("sampled_problems").get<int64_t>());
  }
  // Before RL and after step 1: the periodic size, every problem sampled; after the last step: the final one.
  CHECK(sizes == std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {3, 3}, {9, 4}});
  fs::remove_all(dir);
}

TEST_CASE("train: eval.before_rl false skips the evaluation when RL starts and changes nothing else",
          "[apps][train][eval]") {
  const std::string dir = testing::fresh_temp_dir("train_before_rl");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "eval.every=0", "train.out_dir=" + dir + "/with"},
                       apps::run_train) == 0);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "eval.every=0", "eval.before_rl=false",
                        "train.out_dir=" + dir + "/without"},
                       apps::run_train) == 0);
  const auto eval_steps = [](const std::string& run) {
    std::istringstream in(io::read_file(run + "/eval.jsonl"));
    std::vector<int64_t> steps;
    for (std::string line; std::getline(in, line);) steps.push_back(nlohmann::json::parse(line).at("step").get<int64_t>());
    return steps;
  };
  CHECK(eval_steps(dir + "/with") == std::vector<int64_t>{0, 2});
  CHECK(eval_steps(dir + "/without") == std::vector<int64_t>{2});
  // Evaluation draws from no training stream: the steps and the final evaluation are the same.
  const auto with = deterministic_metrics(dir + "/with"), without = deterministic_metrics(dir + "/without");
  REQUIRE(with.size() == 2);
  REQUIRE(without.size() == 2);
  for (size_t i = 0; i < with.size(); ++i) CHECK(with[i].dump() == without[i].dump());
  const auto last_line = [](const std::string& path) {
    std::istringstream in(io::read_file(path));
    std::string line, last;
    while (std::getline(in, line)) last = line;
    auto j = nlohmann::json::parse(last);
    j.erase("seconds");
    return j.dump();
  };
  CHECK(last_line(dir + "/with/eval.jsonl") == last_line(dir + "/without/eval.jsonl"));
  fs::remove_all(dir);
}

namespace {
std::vector<nlohmann::json> jsonl(const std::string& path) {
  std::istringstream in(io::read_file(path));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}
}  // namespace

TEST_CASE("train: overrides given with --resume are kept by the next --resume, and segments.jsonl lists them",
          "[apps][train][resume]") {
  const std::string dir = testing::fresh_temp_dir("train_resume_overrides");
  const std::string run = dir + "/run";
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "train.out_dir=" + run},
                       apps::run_train) == 0);
  REQUIRE(call_command({"train", "--resume", run, "train.steps=3", "sampler.temperature=0.75"},
                       apps::run_train) == 0);
  CHECK(rl::load_run_config(run + "/config.yaml").sampler.temperature == 0.75);
  // The next resume names neither key: it keeps both (train.steps 3 would make this one a no-op).
  REQUIRE(call_command({"train", "--resume", run, "train.steps=4"}, apps::run_train) == 0);
  const rl::RunConfig last = rl::load_run_config(run + "/checkpoints/step-000004/run_config.yaml");
  CHECK(last.sampler.temperature == 0.75);
  CHECK(last.train.steps == 4);
  CHECK(rl::load_run_config(run + "/config.yaml").train.steps == 4);
  const std::vector<nlohmann::json> segments = jsonl(run + "/segments.jsonl");
  REQUIRE(segments.size() == 3);
  CHECK(segments[0]["segment"] == 1);
  CHECK(segments[0]["resumed"] == false);
  CHECK(segments[0]["config"] == dir + "/run.yaml");
  CHECK(segments[0]["overrides"] == nlohmann::json{"train.steps=2", "train.out_dir=" + run});
  CHECK(segments[1]["resumed"] == true);
  CHECK(segments[1]["from_step"] == 2);
  CHECK(segments[1]["config"] == run + "/config.yaml");
  CHECK(segments[1]["overrides"] == nlohmann::json{"train.steps=3", "sampler.temperature=0.75"});
  CHECK(segments[2]["segment"] == 3);
  CHECK(segments[2]["from_step"] == 3);
  CHECK(segments[2]["overrides"] == nlohmann::json{"train.steps=4"});
  fs::remove_all(dir);
}

TEST_CASE(
    "train: --resume of a finished run changes nothing, and rl.algo and task.name cannot change on resume",
    "[apps][train][resume]") {
  const std::string dir = testing::fresh_temp_dir("train_resume_finished");
  const std::string run = dir + "/run";
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "train.out_dir=" + run},
                       apps::run_train) == 0);
  const auto files = [&] {
    std::vector<std::string> out;
    for (const char* f : {"config.yaml", "segments.jsonl", "metrics.jsonl", "eval.jsonl", "samples.jsonl",
                          "checkpoints/latest"})
      out.push_back(io::read_file(run + "/" + f));
    return out;
  };
  const std::vector<std::string> before = files();
  REQUIRE(jsonl(run + "/eval.jsonl").size() == 2);  // before RL and after step 2
  REQUIRE(call_command({"train", "--resume", run}, apps::run_train) == 0);
  REQUIRE(call_command({"train", "--resume", run, "train.steps=1", "sampler.temperature=0.5"},
                       apps::run_train) == 0);
  CHECK(files() == before);  // no second evaluation, no new segment, config.yaml untouched
  CHECK_THROWS_WITH(
      call_command({"train", "--resume", run, "rl.algo=grpo", "train.steps=3"}, apps::run_train),
      Catch::Contains("rl.algo grpo differs from the run's gtpo") &&
          Catch::Contains("train.init_from=" + run + "/checkpoints/step-000002"));
  CHECK_THROWS_WITH(
      call_command({"train", "--resume", run, "task.name=countdown", "train.steps=3"}, apps::run_train),
      Catch::Contains("task.name countdown differs from the run's arith"));
  CHECK(files() == before);
  // A larger train.steps trains on: one more step, one more evaluation.
  REQUIRE(call_command({"train", "--resume", run, "train.steps=3"}, apps::run_train) == 0);
  CHECK(jsonl(run + "/metrics.jsonl").size() == 3);
  CHECK(jsonl(run + "/eval.jsonl").size() == 3);
  fs::remove_all(dir);
}

TEST_CASE(
    "train: warnings for a model section that init_from overrides and a default lr on a large trained model",
    "[apps][train][warnings]") {
  const std::string dir = testing::fresh_temp_dir("train_init_warnings");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  io::write_file_atomic(dir + "/small.yaml",
                        "model:\n  architecture: llama\n  vocab_size: 64\n  hidden_size: 32\n"
                        "  num_hidden_layers: 2\n  num_attention_heads: 4\n  num_key_value_heads: 2\n"
                        "  max_position_embeddings: 64\n");
  // Over 20M parameters: a trained model, for which the toy default optim.lr 1e-3 is far too high.
  io::write_file_atomic(dir + "/large.yaml",
                        "model:\n  architecture: llama\n  vocab_size: 64\n  hidden_size: 1024\n"
                        "  num_hidden_layers: 2\n  num_attention_heads: 4\n  num_key_value_heads: 2\n"
                        "  max_position_embeddings: 64\n");
  REQUIRE(call_command({"init", dir + "/small.yaml", "--out", dir + "/small"}, apps::run_init) == 0);
  REQUIRE(call_command({"init", dir + "/large.yaml", "--out", dir + "/large"}, apps::run_init) == 0);
  const auto train = [&](const std::string& init_from, const std::string& out, const std::string& more) {
    return testing::run_shell(testing::gtpo_binary() + " train " + dir +
                              "/run.yaml train.steps=0 sft.steps=0 " +
                              "eval.before_rl=false train.init_from=" + dir + "/" + init_from +
                              " train.out_dir=" + dir + "/" + out + " " + more);
  };
  const testing::ShellResult small = train("small", "a", "model.hidden_size=48");
  INFO(small.output);
  CHECK(small.code == 0);
  CHECK_THAT(small.output,
             Catch::Contains("warning: the config's model: section is ignored: train.init_from " + dir +
                             "/small brings its own model, which differs in ") &&
                 Catch::Contains("hidden_size (config 48, checkpoint 32)"));
  CHECK_THAT(small.output, !Catch::Contains("max_position_embeddings (config"));
  CHECK_THAT(small.output, !Catch::Contains("optim.lr"));
  const testing::ShellResult large = train("large", "b", "model.hidden_size=1024");
  INFO(large.output);
  CHECK(large.code == 0);
  CHECK_THAT(large.output,
             Catch::Contains("warning: optim.lr is 0.001, its default for tiny models trained "
                             "from scratch, while train.init_from starts from a trained model of 2"));
  CHECK_THAT(large.output, !Catch::Contains("model: section is ignored"));
  const testing::ShellResult set = train("large", "c", "model.hidden_size=1024 optim.lr=1e-6");
  CHECK(set.code == 0);
  CHECK_THAT(set.output, !Catch::Contains("optim.lr"));
  fs::remove_all(dir);
}

TEST_CASE("train: a step whose groups were all dropped still logs what the model wrote, marked dropped",
          "[apps][train][samples]") {
  const std::string dir = testing::fresh_temp_dir("train_dropped_samples");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  // An untrained model answers nothing right, so dynamic sampling drops every group of every round.
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=2", "sft.steps=0",
                        "rl.dynamic_sampling=true", "rl.max_resample_rounds=1", "log.samples=6",
                        "eval.every=0", "eval.before_rl=false", "train.out_dir=" + dir + "/run"},
                       apps::run_train) == 0);
  for (const nlohmann::json& m : jsonl(dir + "/run/metrics.jsonl")) {
    REQUIRE(m["groups_kept"] == 0);
    for (const char* unmeasured :
         {"entropy_mean", "response_length_mean", "ratio_mean", "policy_entropy", "loss"})
      CHECK(m[unmeasured].is_null());  // nothing kept, nothing updated: not a real-looking 0
    CHECK(m["groups_sampled"].get<int64_t>() > 0);
  }
  const std::vector<nlohmann::json> samples = jsonl(dir + "/run/samples.jsonl");
  REQUIRE(samples.size() == 12);  // log.samples of each of the 2 steps
  for (const nlohmann::json& s : samples) {
    CHECK(s["dropped"] == true);
    CHECK_FALSE(s.contains("shaped"));
    CHECK(s["tokens"].size() == s["entropies"].size());
    CHECK(s["advantages"].size() == s["tokens"].size());
    for (const auto& a : s["advantages"]) CHECK(a == 0.0);
    for (const auto& m : s["loss_mask"]) CHECK(m == 0);
  }
  CHECK(samples[0]["problem"] == samples[3]["problem"]);  // group order: G = 4 responses of one prompt
  CHECK(samples[3]["problem"] != samples[4]["problem"]);
  // Without dynamic sampling every group is kept and logged; one the advantage math leaves out (all its
  // responses alike) is marked dropped and has no shaped reward, as before.
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=1", "sft.steps=0", "log.samples=4",
                        "eval.every=0", "eval.before_rl=false", "train.out_dir=" + dir + "/kept"},
                       apps::run_train) == 0);
  const std::vector<nlohmann::json> kept = jsonl(dir + "/kept/samples.jsonl");
  REQUIRE(kept.size() == 4);
  for (const nlohmann::json& s : kept) CHECK(s.contains("shaped") == !s["dropped"].get<bool>());
  fs::remove_all(dir);
}

TEST_CASE("train: gtpo sample formats a prompt as the run's training prompts, and --raw keeps it as given",
          "[apps][sample]") {
  const std::string dir = testing::fresh_temp_dir("sample_run_format");
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.steps=1", "sft.steps=0", "eval.before_rl=false",
                        "train.out_dir=" + dir + "/run"},
                       apps::run_train) == 0);
  // The prompt ids of the first sample, and what was said on stderr.
  const auto sample = [&](const std::string& extra) {
    const testing::ShellResult r =
        testing::run_shell(testing::gtpo_binary() + " sample --checkpoint " + dir +
                           "/run --prompt '1+2=' -n 1 --max-new-tokens 2 --jsonl" + extra);
    REQUIRE(r.code == 0);
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);)
      if (!line.empty() && line[0] == '{')
        return std::make_pair(nlohmann::json::parse(line)["prompt_tokens"], r.output);
    FAIL("no sample line in: " << r.output);
    return std::make_pair(nlohmann::json(), r.output);
  };
  const auto [formatted, said] = sample("");
  const auto [raw, raw_said] = sample(" --raw");
  const model::LoadedModel m = model::load_model(*rl::latest_checkpoint(dir + "/run"));
  // arith's prompts end with a newline: the run trained on "...=\n", so the sample is asked the same way.
  CHECK(formatted == nlohmann::json(m.tokenizer->encode("1+2=\n")));
  CHECK(raw == nlohmann::json(m.tokenizer->encode("1+2=")));
  CHECK_THAT(said, Catch::Contains("the trailing newline of task arith's prompts"));
  CHECK_THAT(raw_said, !Catch::Contains("formatted as the run's"));
  fs::remove_all(dir);
}
