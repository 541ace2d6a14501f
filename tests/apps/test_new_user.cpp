// What a new user trips on, run as the user runs it (gtpo as a child process): a failure right after the
// warm start keeps the warm start, a failed start's directory can be used again, a reward command that
// cannot run fails before SFT, arguments a command does not take are errors, and a resume says what it
// changes and nothing else.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "apps/cpu_load.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kSource = GTPO_SOURCE_DIR;
// A reward process that kills gtpo (its parent) when the first request arrives: a crash in RL step 1.
const std::string kKillAtFirstRequest = "reward.functions[0].command=read line && kill -9 $PPID";
const std::string kGoodReward =
    "reward.functions[0].command=sh " + kSource + "/examples/rewards/has_answer.sh";

std::string setup(const std::string& name, const std::string& sft_steps) {
  const std::string dir = testing::fresh_temp_dir(name);
  io::write_file_atomic(dir + "/run.yaml", testing::tiny_run_yaml({{"sampler.group_size", "2"},
                                                                   {"sampler.max_new_tokens", "8"},
                                                                   {"rl.algo", "grpo"},
                                                                   {"sft.steps", sft_steps},
                                                                   {"sft.batch_size", "4"},
                                                                   {"train.steps", "2"},
                                                                   {"train.prompts_per_step", "2"},
                                                                   {"train.threads", "1"},
                                                                   {"eval.every", "0"},
                                                                   {"eval.num_problems", "2"},
                                                                   {"eval.k", "1"}}));
  return dir;
}

// `gtpo ARGS` through the shell (each argument single-quoted) in the source directory (the shipped configs'
// paths are relative to it), with its exit code (128 + N for signal N) and output.
testing::ShellResult run_gtpo_cli(const std::vector<std::string>& args) {
  std::string line = "cd '" + kSource + "' && OMP_WAIT_POLICY=passive " + testing::gtpo_binary();
  for (const std::string& a : args) line += " '" + a + "'";
  return testing::run_shell(line);
}

testing::ShellResult train(const std::string& dir, const std::string& run,
                           const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"train", dir + "/run.yaml", "train.out_dir=" + dir + "/" + run,
                                   "reward.functions[0].name=answer"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_gtpo_cli(args);
}
}  // namespace

TEST_CASE(
    "train: a crash in RL step 1 keeps the SFT warm start, and resuming from it is the uninterrupted run",
    "[apps][train][new_user]") {
  const std::string dir = setup("new_user_sft_kept", "3");
  REQUIRE(train(dir, "whole", {kGoodReward}).code == 0);
  const testing::ShellResult crashed = train(dir, "crashed", {kKillAtFirstRequest});
  INFO(crashed.output);
  REQUIRE(crashed.code == 128 + 9);  // SIGKILL: no handler ran, whatever is on disk was there before step 1
  REQUIRE(io::read_file(dir + "/crashed/checkpoints/latest") == "step-000000\n");
  const testing::ShellResult resumed = run_gtpo_cli({"train", "--resume", dir + "/crashed", kGoodReward});
  INFO(resumed.output);
  REQUIRE(resumed.code == 0);
  CHECK_THAT(resumed.output,
             Contains("resume: changed from the run's config.yaml: reward.functions[0].command "
                      "\"read line && kill -9 $PPID\" -> \"sh "));
  const std::string segments = io::read_file(dir + "/crashed/segments.jsonl");
  const nlohmann::json segment = nlohmann::json::parse(segments.substr(segments.rfind('{')));
  CHECK(segment["resumed"] == true);  // from the warm start's checkpoint: SFT done, no RL step yet
  CHECK(segment["from_sft_step"] == 3);
  CHECK(segment["from_step"] == 0);
  for (const char* file : {"model.safetensors", "optimizer.safetensors"})
    CHECK(io::read_file(dir + "/crashed/checkpoints/step-000002/" + file) ==
          io::read_file(dir + "/whole/checkpoints/step-000002/" + file));
  fs::remove_all(dir);
}

TEST_CASE("train: a start that ended before its first checkpoint leaves a directory a new run can take",
          "[apps][train][new_user]") {
  const std::string dir = setup("new_user_failed_start", "0");
  REQUIRE(train(dir, "run", {kKillAtFirstRequest}).code == 128 + 9);
  REQUIRE(fs::exists(dir + "/run/config.yaml"));
  REQUIRE_FALSE(fs::exists(dir + "/run/checkpoints/latest"));
  const testing::ShellResult resume = run_gtpo_cli({"train", "--resume", dir + "/run"});
  CHECK(resume.code != 0);
  CHECK_THAT(resume.output,
             Contains("its start ended before the first checkpoint; start it again with gtpo train"));
  const testing::ShellResult again = train(dir, "run", {kGoodReward});
  INFO(again.output);
  CHECK(again.code == 0);
  CHECK_THAT(again.output, Contains("holds only the logs of a start that ended before its first checkpoint"));
  // A directory with anything of value is still refused: here the finished run's checkpoints.
  const testing::ShellResult third = train(dir, "run", {kGoodReward});
  CHECK(third.code != 0);
  CHECK_THAT(third.output, Contains("is not empty"));
  fs::remove_all(dir);
}

TEST_CASE("train: a reward command that cannot run fails before the SFT warm start, leaving nothing to clean",
          "[apps][train][new_user][rewards]") {
  const std::string dir = setup("new_user_reward_probe", "100000");  // SFT would take minutes
  for (const std::string& command : {"pyhton3 " + kSource + "/examples/rewards/gsm8k_reward.py",
                                     "python3 " + dir + "/missing_reward.py"}) {
    const testing::ShellResult r = train(dir, "run", {"reward.functions[0].command=" + command});
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK_THAT(r.output,
               Contains("the process ended (exited with status") && Contains("before its first request"));
    CHECK_THAT(r.output, !Contains("sft:"));
    CHECK_FALSE(fs::exists(dir + "/run/sft.jsonl"));
  }
  fs::remove_all(dir);
}

TEST_CASE("commands: arguments a command does not take are errors, and eval says which task options it uses",
          "[apps][new_user][args]") {
  const std::string dir = setup("new_user_args", "2");
  REQUIRE(train(dir, "run", {kGoodReward}).code == 0);
  const std::string run = dir + "/run", data = kSource + "/examples/gsm8k/test.jsonl";
  const std::vector<std::pair<std::vector<std::string>, std::string>> refused = {
      {{"sample", "--checkpoint", run, "--prompt", "1+2=", "foo=1"}, "sample: unexpected argument 'foo=1'"},
      {{"sample", "--checkpoint", run, "--prompt", "1+2=", "extra"}, "sample: unexpected argument 'extra'"},
      {{"eval", "--checkpoint", run, "--data", data, "foo.bar=1"},
       "'foo.bar=1' sets a task generator's option, but the problems come from --data"},
      {{"eval", "--checkpoint", run, "stray"}, "eval: unexpected argument 'stray'"},
      {{"score", "--checkpoint", run, "--in", data, "--out", dir + "/o.jsonl", "x=1"},
       "score: unexpected argument"},
      {{"export", run, "--out", dir + "/hf", "model.x=1"}, "export: unexpected argument 'model.x=1'"},
      {{"eval", "--checkpoint", run, "foo.bar=1"}, "task arith: unknown option 'foo.bar'"},
  };
  for (const auto& [args, message] : refused) {
    const testing::ShellResult r = run_gtpo_cli(args);
    INFO(args[0] << ": " << r.output);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains(message));
  }
  const testing::ShellResult harder =
      run_gtpo_cli({"eval", "--checkpoint", run, "difficulty=3", "--problems", "2", "-k", "0"});
  CHECK(harder.code == 0);
  CHECK_THAT(harder.output,
             Contains("eval: task arith with options difficulty=3 (the run's, with the command "
                      "line's KEY=VALUE over them)"));
  const testing::ShellResult typo = train(dir, "typo", {kGoodReward, "train.init_from=" + dir + "/runn"});
  CHECK(typo.code == 1);
  CHECK_THAT(typo.output,
             Contains("train.init_from '" + dir + "/runn' does not exist (expected a directory"));
  fs::remove_all(dir);
}

TEST_CASE("train --resume: says what the resume changes, and no note about keys the user never set",
          "[apps][train][new_user][resume]") {
  const std::string dir = setup("new_user_resume_note", "0");
  REQUIRE(train(dir, "run", {kGoodReward}).code == 0);
  const testing::ShellResult same = run_gtpo_cli({"train", "--resume", dir + "/run", "train.steps=3"});
  INFO(same.output);
  CHECK(same.code == 0);
  CHECK_THAT(same.output, Contains("resume: changed from the run's config.yaml: train.steps 2 -> 3\n"));
  CHECK_THAT(same.output,
             !Contains("no effect"));  // the run's config.yaml holds every key: gtpo's, not the user's
  const testing::ShellResult unread =
      run_gtpo_cli({"train", "--resume", dir + "/run", "train.steps=4", "grpo_s.beta1=0.5"});
  CHECK_THAT(unread.output,
             Contains("these settings have no effect with rl.algo grpo and rl.policy_loss clip: "
                      "grpo_s.beta1 (command line)\n"));
  fs::remove_all(dir);
}

TEST_CASE("train: the default optim.lr from a Hugging Face init_from is warned about whatever its size",
          "[apps][train][new_user]") {
  const std::string dir = testing::fresh_temp_dir("new_user_hf_lr");
  const std::vector<std::string> base = {"train",
                                         kSource + "/configs/gsm8k-chat.yaml",
                                         "train.out_dir=" + dir + "/a",
                                         "train.steps=1",
                                         "eval.before_rl=false",
                                         "eval.every=0",
                                         "sft.steps=0"};
  std::vector<std::string> with_default = base;
  with_default.push_back("~optim.lr");
  const testing::ShellResult r = run_gtpo_cli(with_default);
  INFO(r.output);
  CHECK_THAT(r.output,
             Contains("warning: optim.lr is 0.001, its default for tiny models trained from scratch, "
                      "while train.init_from starts from a Hugging Face model of"));
  std::vector<std::string> shipped = base;
  shipped[2] = "train.out_dir=" + dir + "/b";
  CHECK_THAT(run_gtpo_cli(shipped).output, !Contains("optim.lr"));  // the config sets its own
  fs::remove_all(dir);
}

TEST_CASE("sample and eval on a Hugging Face directory render prompts through its chat template by default",
          "[apps][new_user][chat]") {
  const std::string dir = testing::fresh_temp_dir("new_user_hf_template");
  const std::string fixture = kSource + "/tests/fixtures/hf_chat_qwen2";
  io::write_file_atomic(dir + "/in.jsonl", R"({"messages": [{"role": "user", "content": "What is 2+2?"}]})"
                                           "\n");
  REQUIRE(run_gtpo_cli({"tokenize", "--tokenizer", fixture, "--chat", "--add-generation-prompt", "--in",
                        dir + "/in.jsonl", "--out", dir + "/ids.jsonl"})
              .code == 0);
  const nlohmann::json expected = nlohmann::json::parse(io::read_file(dir + "/ids.jsonl"))["ids"];
  const auto prompt_ids = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"sample",       "--checkpoint",     fixture, "--prompt",
                                     "What is 2+2?", "--max-new-tokens", "1",     "--jsonl"};
    args.insert(args.end(), extra.begin(), extra.end());
    const testing::ShellResult r = run_gtpo_cli(args);
    INFO(r.output);
    REQUIRE(r.code == 0);
    return std::make_pair(nlohmann::json::parse(r.output.substr(r.output.find('{')))["prompt_tokens"],
                          r.output);
  };
  const auto [templated, said] = prompt_ids({});
  CHECK(templated == expected);  // what apply_chat_template(add_generation_prompt=True) gives
  CHECK_THAT(said, Contains("sample: prompts through the tokenizer's chat template, as one user turn (the "
                            "directory's chat template; --chat-template none: as given)"));
  const auto [plain, said_plain] = prompt_ids({"--chat-template", "none"});
  CHECK(plain != expected);
  CHECK_THAT(said_plain, Contains("sample: prompts as given (--chat-template none)"));
  const testing::ShellResult eval =
      run_gtpo_cli({"eval", "--checkpoint", fixture, "--data", kSource + "/examples/gsm8k/test.jsonl",
                    "--problems", "2", "-k", "0"});
  CHECK(eval.code == 0);
  CHECK_THAT(eval.output, Contains("eval: prompts through the tokenizer's chat template"));
  fs::remove_all(dir);
}

TEST_CASE("threads: the default fits the cores other processes leave free", "[apps][new_user][threads]") {
  const std::optional<apps::CpuTimes> t =
      apps::parse_proc_stat("intr 5\ncpu  100 5 20 800 50 1 2 3 0 0\ncpu0 50 2 10 400 25 0 1 1 0 0\n");
  REQUIRE(t.has_value());
  CHECK(t->total == 981.0);
  CHECK(t->busy == 131.0);  // all but idle and iowait
  CHECK_FALSE(apps::parse_proc_stat("cpu0 1 2 3 4\n").has_value());
  CHECK(apps::threads_for_load(1.0, 2, 2) == 1);
  CHECK(apps::threads_for_load(0.2, 2, 2) == 2);
  CHECK(apps::threads_for_load(2.0, 2, 2) == 1);  // never 0
  CHECK(apps::threads_for_load(3.4, 16, 16) == 13);
  CHECK(apps::threads_for_load(0.0, 16, 4) == 4);  // never more than OpenMP would use

  // A process spinning on one core: a default run says it uses fewer threads; a set train.threads is kept.
  const pid_t spinner = ::fork();
  if (spinner == 0) ::execl("/bin/sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
  const std::string dir = setup("new_user_threads", "0");
  const testing::ShellResult busy = train(dir, "a", {kGoodReward, "~train.threads", "train.steps=1"});
  const testing::ShellResult pinned = train(dir, "b", {kGoodReward, "train.threads=2", "train.steps=1"});
  ::kill(spinner, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  INFO(busy.output);
  CHECK(busy.code == 0);
  CHECK_THAT(busy.output, Contains("cores are busy with other processes: training with "));
  CHECK_THAT(pinned.output, !Contains("busy with other processes"));
  fs::remove_all(dir);
}
