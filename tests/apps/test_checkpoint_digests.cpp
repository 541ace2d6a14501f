// Checkpoint digests (runtime/io/file_digest.h): a checkpoint changed after it was saved is refused where it
// is read, naming the file, in gtpo train --resume and gtpo eval run as child processes; xxHash's own
// xxh128sum agrees with the digests.
#include <catch2/catch.hpp>
#include <filesystem>

#include "apps/commands.h"
#include "rl/run/train_state.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

// Flips the lowest bit of the byte in the middle of PATH.
void flip_middle_byte(const std::string& path) {
  std::string bytes = io::read_file(path);
  bytes[bytes.size() / 2] ^= 1;
  io::write_file_atomic(path, bytes);
}

}  // namespace

TEST_CASE("checkpoint digests: a byte changed in any checkpoint file is an error at --resume and at eval",
          "[apps][checkpoint]") {
  const std::string dir = testing::fresh_temp_dir("checkpoint_digests");
  io::write_file_atomic(dir + "/run.yaml", testing::tiny_run_yaml({{"sft.steps", "0"},
                                                                   {"rl.dynamic_sampling", "false"},
                                                                   {"train.steps", "1"},
                                                                   {"train.prompts_per_step", "2"},
                                                                   {"sampler.group_size", "2"},
                                                                   {"sampler.max_new_tokens", "8"},
                                                                   {"eval.every", "0"},
                                                                   {"eval.num_problems", "2"}}));
  const std::string run = dir + "/run";
  REQUIRE(testing::call_command({"train", dir + "/run.yaml", "train.out_dir=" + run}, apps::run_train) == 0);
  const std::string checkpoint = *rl::latest_checkpoint(run);
  // Every file of the checkpoint is listed, and xxHash's command-line tool checks them alike.
  const std::string listed = io::read_file(checkpoint + "/" + io::kDigestFile);
  for (const char* name : {"model.safetensors", "optimizer.safetensors", "state.json", "config.yaml",
                           "tokenizer.json", "run_config.yaml"})
    CHECK_THAT(listed, Contains(std::string("  ") + name + "\n"));
  const auto tool = testing::run_shell("cd " + checkpoint + " && xxh128sum -c " + io::kDigestFile);
  INFO(tool.output);
  CHECK(tool.code == 0);
  CHECK(io::verify_directory_digests(checkpoint));

  for (const char* name : {"model.safetensors", "optimizer.safetensors", "state.json"}) {
    INFO(name);
    const std::string copy = dir + "/copy-" + name;
    fs::copy(run, copy, fs::copy_options::recursive);
    flip_middle_byte(*rl::latest_checkpoint(copy) + "/" + name);
    const std::string expected = std::string(name) + " does not match its digest in " + io::kDigestFile;
    const auto resume = testing::run_shell("OMP_WAIT_POLICY=passive timeout 120 " + testing::gtpo_binary() +
                                           " train --resume " + copy + " train.steps=2");
    INFO(resume.output);
    CHECK(resume.code == 1);
    CHECK_THAT(resume.output, Contains(expected));
    const auto eval = testing::run_shell("OMP_WAIT_POLICY=passive timeout 120 " + testing::gtpo_binary() +
                                         " eval --checkpoint " + copy + " --threads 1");
    INFO(eval.output);
    CHECK(eval.code == 1);
    CHECK_THAT(eval.output, Contains(expected));
  }
  // The untouched run resumes.
  CHECK(testing::call_command({"train", "--resume", run, "train.steps=2"}, apps::run_train) == 0);
  fs::remove_all(dir);
}
