// Every shipped run config loads and validates.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "data/tasks/registry.h"
#include "rl/run_config.h"

using namespace gtpo;

TEST_CASE("configs: the quick start, tiny-llama and every per-algorithm config load", "[apps][configs]") {
  const std::filesystem::path root = std::filesystem::path(GTPO_SOURCE_DIR) / "configs";
  std::vector<std::filesystem::path> files = {root / "quickstart.yaml", root / "tiny-llama.yaml"};
  for (const auto& e : std::filesystem::directory_iterator(root / "algorithms")) files.push_back(e.path());
  REQUIRE(files.size() == 8);
  for (const auto& f : files) {
    INFO(f.string());
    rl::RunConfig c = rl::load_run_config(f.string());
    if (f.parent_path().filename() == "algorithms") CHECK(c.rl.algo == f.stem().string());
  }
}

TEST_CASE("configs: the GPU check's config loads and asks for the GPU", "[apps][configs]") {
  const auto path = std::filesystem::path(GTPO_SOURCE_DIR) / "configs" / "gpu-check.yaml";
  const rl::RunConfig c = rl::load_run_config(path.string());
  CHECK(c.train.device == Device::cuda);
  CHECK(c.train.steps == 20);  // scripts/gpu_check.sh expects 20 lines of metrics
  // On the CPU (a machine without a GPU) the same run is valid too.
  CHECK(rl::load_run_config(path.string(), {{"train.device", "cpu"}}).train.device == Device::cpu);
}

TEST_CASE("configs: the TRL comparison's large workload loads with its documented shape", "[apps][configs]") {
  // scripts/bench/trl_compare.sh --workload large and docs/performance.md describe this config: a model of
  // about 9M parameters (12 layers of hidden 256) whose responses may reach 128 tokens after a prompt.
  const auto path = std::filesystem::path(GTPO_SOURCE_DIR) / "configs" / "bench-trl-large.yaml";
  const rl::RunConfig c = rl::load_run_config(path.string());
  REQUIRE(c.model.has_value());
  CHECK(c.model->hidden_size == 256);
  CHECK(c.model->num_hidden_layers == 12);
  CHECK(c.sampler.max_new_tokens == 128);
  CHECK(c.model->max_position_embeddings >= 128 + 22);  // "999999999+999999999=?\n" is 22 characters
  CHECK(c.rl.algo == "grpo");  // TRL's GRPOTrainer runs GRPO; the comparison forces it on the quick start too
  CHECK_FALSE(c.rl.dynamic_sampling);
}

TEST_CASE("configs: the long-reasoning study's task fits its model and response limit", "[apps][configs]") {
  // scripts/study.sh and docs/results.md describe this config: progressions whose reference solutions are
  // 64 to 215 characters (= tokens of the character tokenizer) and vary with the problem.
  const auto path = std::filesystem::path(GTPO_SOURCE_DIR) / "configs" / "study-progression.yaml";
  const rl::RunConfig c = rl::load_run_config(path.string());
  REQUIRE(c.model.has_value());
  const auto task = data::make_task(c.task.name, c.task.options);
  size_t shortest = SIZE_MAX, longest = 0, longest_prompt = 0;
  for (uint64_t i = 0; i < 3000; ++i) {
    for (data::Split split : {data::Split::train, data::Split::test}) {
      const data::Problem p = task->generate(c.train.seed, split, i);
      shortest = std::min(shortest, p.reference_solution.size());
      longest = std::max(longest, p.reference_solution.size());
      longest_prompt = std::max(longest_prompt, p.prompt.size());
    }
  }
  CHECK(shortest >= 40);
  CHECK(shortest <= 70);
  CHECK(longest >= 200);
  CHECK(static_cast<int64_t>(longest) <= c.sampler.max_new_tokens);
  CHECK(static_cast<int64_t>(longest_prompt + c.sampler.max_new_tokens) <= c.model->max_position_embeddings);
}
