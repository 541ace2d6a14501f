// kill -9 torture of every writer of a checkpoint or run file: gtpo init --out, gtpo sft --out and gtpo train
// (checkpoints/step-N, checkpoints/latest, config.yaml, the logs). Each writer is killed 20 times at random
// moments over the length of an uninterrupted run; after every kill what is on disk must load, fully valid:
// the old checkpoint or the new one, never a mix. Bounded: tiny models, a few seconds per writer.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "model/checkpoint.h"
#include "rl/run/train_state.h"
#include "rl/run_config.h"
#include "runtime/io/atomic_dir.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
namespace fs = std::filesystem;

namespace {
constexpr int kKills = 20;

// Every parameter, in order: two checkpoints are the same iff these are equal.
std::vector<std::vector<float>> weights_of(const std::string& dir) {
  model::LoadedModel m = model::load_model(dir);
  std::vector<std::vector<float>> out;
  for (const optim::Parameter& p : m.model->parameters()) out.push_back(p.tensor.to_vector());
  return out;
}

bool leftover_beside(const std::string& dir) {
  return fs::exists(io::temporary_directory_for(dir)) || fs::exists(io::replaced_directory_for(dir));
}

// Kills `gtpo ARGS` with SIGKILL after a random delay, kKills times, calling check() after each kill: even
// kills anywhere in [0, window), odd ones in its last part, where the writes are. Returns how many kills
// left a leftover beside DIR (a directory write was under way).
template <typename MakeArgs, typename Check, typename MidWrite>
int torture(const char* name, double window, MidWrite mid_write_left, MakeArgs make_args, Check check) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  int mid_write = 0;
  for (int i = 0; i < kKills; ++i) {
    INFO(name << " kill " << i);
    const pid_t child = testing::spawn_gtpo(make_args(i));
    const double u = unit(rng);
    std::this_thread::sleep_for(std::chrono::duration<double>(window * (i % 2 ? 0.6 + 0.4 * u : u)));
    ::kill(child, SIGKILL);
    testing::wait_exit_code(child);
    mid_write += mid_write_left();
    check(i);
  }
  std::printf("kill -9 torture, %s: %d kills over %.2fs runs, %d during a directory replacement, all loadable\n",
              name, kKills, window, mid_write);
  return mid_write;
}

const char* kModelYaml = "model:\n  architecture: llama\n  vocab_size: 260\n  hidden_size: 128\n  num_hidden_layers: 4\n"
                         "  num_attention_heads: 4\n  max_position_embeddings: 64\n";

const std::string kRunYaml = testing::tiny_run_yaml({{"sampler.group_size", "2"},
                                                     {"sampler.max_new_tokens", "12"},
                                                     {"rl.algo", "grpo"},
                                                     {"rl.dynamic_sampling", "false"},
                                                     {"sft.steps", "4"},
                                                     {"sft.batch_size", "4"},
                                                     {"train.steps", "4"},
                                                     {"train.prompts_per_step", "2"},
                                                     {"train.checkpoint_every", "1"},
                                                     {"train.sample_every", "1"},
                                                     {"eval.every", "2"},
                                                     {"eval.num_problems", "4"},
                                                     {"eval.k", "1"}});
}  // namespace

TEST_CASE("kill -9: init --out over a checkpoint leaves the old or the new one", "[apps][torture][init]") {
  const std::string dir = testing::fresh_temp_dir("torture_init");
  io::write_file_atomic(dir + "/model.yaml", kModelYaml);
  const std::string out = dir + "/ckpt";
  // The two versions every kill must leave one of.
  REQUIRE(testing::run_gtpo({"init", dir + "/model.yaml", "train.seed=1", "--out", dir + "/ref1"}).first ==
          0);
  const auto [code, seconds] =
      testing::run_gtpo({"init", dir + "/model.yaml", "train.seed=2", "--out", dir + "/ref2"});
  REQUIRE(code == 0);
  const auto ref1 = weights_of(dir + "/ref1"), ref2 = weights_of(dir + "/ref2");
  REQUIRE(ref1 != ref2);
  REQUIRE(testing::run_gtpo({"init", dir + "/model.yaml", "train.seed=1", "--out", out}).first == 0);
  torture(
      "init --out", seconds * 1.1, [&] { return leftover_beside(out); },
      [&](int i) {
        return std::vector<std::string>{"init", dir + "/model.yaml", i % 2 ? "train.seed=1" : "train.seed=2",
                                        "--out", out};
      },
      [&](int) {
        const auto w = weights_of(out);
        CHECK((w == ref1 || w == ref2));
      });
  // The next write puts any leftover right.
  REQUIRE(testing::run_gtpo({"init", dir + "/model.yaml", "train.seed=2", "--out", out}).first == 0);
  CHECK(weights_of(out) == ref2);
  CHECK_FALSE(leftover_beside(out));
  fs::remove_all(dir);
}

TEST_CASE("kill -9: sft --out over a checkpoint leaves the old or the new one", "[apps][torture][sft]") {
  const std::string dir = testing::fresh_temp_dir("torture_sft");
  io::write_file_atomic(dir + "/run.yaml", kRunYaml);
  const std::string out = dir + "/ckpt";
  auto args = [&](const std::string& seed, const std::string& to) {
    // A larger model than the run's, so that writing the checkpoint takes a noticeable part of the run.
    return std::vector<std::string>{"sft",  dir + "/run.yaml", "train.seed=" + seed, "train.out_dir=" + dir + "/run",
                                    "model.hidden_size=128", "model.num_hidden_layers=4", "--out", to};
  };
  REQUIRE(testing::run_gtpo(args("1", dir + "/ref1")).first == 0);
  const auto [code, seconds] = testing::run_gtpo(args("2", dir + "/ref2"));
  REQUIRE(code == 0);
  const auto ref1 = weights_of(dir + "/ref1"), ref2 = weights_of(dir + "/ref2");
  REQUIRE(ref1 != ref2);
  REQUIRE(testing::run_gtpo(args("1", out)).first == 0);
  torture(
      "sft --out", seconds * 1.1, [&] { return leftover_beside(out); }, [&](int i) { return args(i % 2 ? "1" : "2", out); },
      [&](int) {
        const auto w = weights_of(out);
        CHECK((w == ref1 || w == ref2));
        CHECK_NOTHROW(rl::load_run_config(io::readable_directory(out) + "/run_config.yaml"));
      });
  fs::remove_all(dir);
}

TEST_CASE("kill -9: train's checkpoints, latest and config.yaml are always loadable, and --resume finishes",
          "[apps][torture][train]") {
  const std::string dir = testing::fresh_temp_dir("torture_train");
  io::write_file_atomic(dir + "/run.yaml", kRunYaml);
  const std::string run = dir + "/run";
  const auto [code, seconds] = testing::run_gtpo({"train", dir + "/run.yaml", "train.out_dir=" + dir + "/full"});
  REQUIRE(code == 0);
  int with_checkpoint = 0;
  torture(
      "train", seconds * 1.1,
      [&] {  // a checkpoint directory's temporary or replaced copy
        if (!fs::is_directory(run + "/checkpoints")) return false;
        for (const auto& e : fs::directory_iterator(run + "/checkpoints")) {
          const std::string n = e.path().filename().string();
          if (n.size() > 4 && (n.ends_with(".tmp") || n.ends_with(".old"))) return true;
        }
        return false;
      },
      [&](int) {
        return std::vector<std::string>{"train", dir + "/run.yaml", "train.out_dir=" + run, "--overwrite"};
      },
      [&](int) {
        if (fs::exists(run + "/config.yaml")) CHECK_NOTHROW(rl::load_run_config(run + "/config.yaml"));
        const auto latest = rl::latest_checkpoint(run);
        if (!latest) return;
        ++with_checkpoint;
        CHECK_NOTHROW(model::load_model(*latest));
        const rl::TrainProgress p = rl::read_train_progress(*latest);
        CHECK(fs::path(*latest).filename().string().find(std::to_string(p.step)) != std::string::npos);
        model::LoadedModel m = model::load_model(*latest);
        optim::AdamW optimizer(m.model->parameters());
        CHECK_NOTHROW(rl::load_optimizer_state(*latest, optimizer));
      });
  std::printf("kill -9 torture, train: %d of %d kills had written a checkpoint\n", with_checkpoint, kKills);
  // The last killed run continues to the end (or starts over when it was killed before its first checkpoint).
  const bool resumable = rl::latest_checkpoint(run).has_value();
  const std::vector<std::string> finish =
      resumable ? std::vector<std::string>{"train", "--resume", run}
                : std::vector<std::string>{"train", dir + "/run.yaml", "train.out_dir=" + run, "--overwrite"};
  REQUIRE(testing::run_gtpo(finish).first == 0);
  CHECK(weights_of(*rl::latest_checkpoint(run)) == weights_of(*rl::latest_checkpoint(dir + "/full")));
  fs::remove_all(dir);
}
