// --device / --precision on every command that runs a model, and the clean error (exit 1, one line naming
// the command) when device cuda is asked for where there is none. The binary is run with GTPO_DISABLE_CUDA=1,
// so these checks hold on a GPU machine too.
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "apps/commands.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using testing::call_command;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
testing::ShellResult run_gtpo(const std::string& args) {
  return testing::run_shell("GTPO_DISABLE_CUDA=1 OMP_WAIT_POLICY=passive " + testing::gtpo_binary() + " " + args);
}

const std::string kConfig = testing::tiny_run_yaml({{"model.num_hidden_layers", "1"},
                                                    {"sampler.group_size", "2"},
                                                    {"sampler.max_new_tokens", "8"},
                                                    {"sft.steps", "1"},
                                                    {"sft.batch_size", "2"},
                                                    {"train.steps", "1"},
                                                    {"train.prompts_per_step", "1"},
                                                    {"eval.num_problems", "2"},
                                                    {"eval.k", "1"}});
}  // namespace

TEST_CASE("apps: every model command documents --device, bench also --precision", "[apps][device]") {
  for (const char* cmd : {"train", "sft", "eval", "sample", "score", "bench"}) {
    INFO(cmd);
    const testing::ShellResult r = run_gtpo(std::string(cmd) + " --help");
    CHECK(r.code == 0);
    CHECK_THAT(r.output, Contains("--device") && Contains("cpu or cuda"));
  }
  CHECK_THAT(run_gtpo("bench --help").output, Contains("--precision") && Contains("MFU"));
}

TEST_CASE("apps: a bad --device value names the flag and the valid values", "[apps][device]") {
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", "x", "--prompt", "a", "--device", "gpu"}, apps::run_sample),
                    Contains("--device: expected cpu or cuda, got 'gpu'"));
  CHECK_THROWS_WITH(call_command({"bench", "--workload", "train", "--precision", "fp16"}, apps::run_bench),
                    Contains("--precision: expected fp32, tf32 or bf16, got 'fp16'"));
  CHECK_THROWS_WITH(call_command({"bench", "--workload", "train", "--shape", "tiny", "--precision", "bf16"}, apps::run_bench),
                    Contains("matmul_precision: bf16 needs device: cuda"));
}

TEST_CASE("apps: device cuda without a GPU is one clean error line and exit code 1", "[apps][device]") {
  const std::string dir = testing::fresh_temp_dir("apps_device");
  const std::string config = dir + "/run.yaml";
  io::write_file_atomic(config, kConfig);
  const std::string out = dir + "/run";
  const std::string expected = "device cuda is not available";
  struct Case {
    const char* name;
    std::string args;
  };
  const Case cases[] = {
      {"train", "train " + config + " train.out_dir=" + out + " --device cuda"},
      {"train", "train " + config + " train.out_dir=" + out + " train.device=cuda"},
      {"sft", "sft " + config + " train.out_dir=" + out + " --device cuda"},
      {"eval", "eval --checkpoint " + dir + "/none --task arith --device cuda"},
      {"sample", "sample --checkpoint " + dir + "/none --prompt 1+1 --device cuda"},
      {"score", "score --checkpoint " + dir + "/none --in a --out b --device cuda"},
      {"bench", "bench --workload train --shape tiny --device cuda"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const testing::ShellResult r = run_gtpo(c.args);
    CHECK(r.code == 1);
    CHECK_THAT(r.output, Contains(std::string("gtpo ") + c.name + ": error: " + expected));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);  // one line, no stack of messages
  }
  CHECK_FALSE(fs::exists(out));  // refused before the run directory was made
  // The same config on the CPU runs (so it was the device, not the config, that failed above).
  const testing::ShellResult cpu = run_gtpo("sft " + config + " train.out_dir=" + out + " --device cpu");
  CHECK(cpu.code == 0);
  INFO(cpu.output);
  CHECK(fs::exists(out + "/sft/model.safetensors"));
  fs::remove_all(dir);
}
