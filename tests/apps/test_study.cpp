// scripts/study.sh end to end on a tiny config: the shared SFT checkpoint, the runs, the resume that skips
// finished runs, and the table whose means, 95% intervals and paired differences are recomputed here from the
// runs' own eval.jsonl files.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"

using namespace gtpo;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {
const char* kTinyStudy = R"(model:
  architecture: llama
  hidden_size: 32
  num_hidden_layers: 1
  num_attention_heads: 2
  num_key_value_heads: 1
  max_position_embeddings: 96
task:
  name: chain
  min_steps: 2
  max_steps: 5
  ops: "+-"
sampler:
  group_size: 4
  max_new_tokens: 48
sft:
  steps: 20
  batch_size: 8
train:
  steps: 2
  prompts_per_step: 2
eval:
  num_problems: 6
  k: 2
)";

std::pair<int, std::string> shell(const std::string& command) {
  const testing::ShellResult r = testing::run_shell(command);
  return {r.code, r.output};
}

double final_greedy_accuracy(const std::string& run) {
  std::istringstream in(io::read_file(run + "/eval.jsonl"));
  std::string line, last;
  while (std::getline(in, line)) last = line;
  return nlohmann::json::parse(last).at("greedy_accuracy").get<double>();
}

std::string format3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}
}  // namespace

TEST_CASE("study.sh: shared SFT, every run, resume, and a table that matches the runs", "[apps][study]") {
  const std::string dir = testing::fresh_temp_dir("study");
  io::write_file_atomic(dir + "/study.yaml", kTinyStudy);
  const std::string study = std::string("GTPO_BUILD_DIR=") + GTPO_BINARY_DIR + " GTPO_THREADS=1 bash " +
                            GTPO_SOURCE_DIR + "/scripts/study.sh --no-build --config " + dir + "/study.yaml --out " +
                            dir + "/out --methods 'dapo gtpo_separate' --seeds '0 1'";
  const auto [code, out] = shell(study);
  INFO(out);
  REQUIRE(code == 0);
  CHECK_THAT(out, Contains("4 runs of 2 RL steps; 0 finished already"));
  for (const char* run : {"dapo-s0", "dapo-s1", "gtpo_separate-s0", "gtpo_separate-s1"}) {
    INFO(run);
    CHECK(fs::exists(dir + "/out/" + run + "/train.log"));
    // The start was evaluated once, for all runs: no run evaluates at step 0.
    CHECK(io::read_file(dir + "/out/" + run + "/eval.jsonl").find("\"step\":0,") == std::string::npos);
  }
  // The method's overrides reached the run.
  CHECK_THAT(io::read_file(dir + "/out/gtpo_separate-s0/config.yaml"), Contains("adv_norm: separate"));
  CHECK(fs::exists(dir + "/out/sft-eval.txt"));
  CHECK(fs::exists(dir + "/out/report.html"));
  CHECK(fs::exists(dir + "/out/curves.svg"));

  // The table: each method's mean over both seeds, and the paired difference with dapo.
  const std::string table = io::read_file(dir + "/out/table.md");
  const double d0 = final_greedy_accuracy(dir + "/out/dapo-s0"), d1 = final_greedy_accuracy(dir + "/out/dapo-s1");
  const double g0 = final_greedy_accuracy(dir + "/out/gtpo_separate-s0");
  const double g1 = final_greedy_accuracy(dir + "/out/gtpo_separate-s1");
  // Two seeds: the 95% t half-width is 12.706 · sd / √2 with the n − 1 standard deviation, i.e. 12.706 · |a − b| / 2.
  CHECK_THAT(table, Contains("| dapo | 2 | " + format3((d0 + d1) / 2) + " ± " + format3(12.706 * std::fabs(d0 - d1) / 2)));
  CHECK_THAT(table, Contains("| gtpo_separate | 2 | " + format3((g0 + g1) / 2)));
  const double e0 = g0 - d0, e1 = g1 - d1;
  CHECK_THAT(table, Contains("| gtpo_separate | 2 | " + format3((e0 + e1) / 2) + " ± " + format3(12.706 * std::fabs(e0 - e1) / 2)));

  // A second call finds every run finished and trains nothing.
  const auto [code2, out2] = shell(study);
  INFO(out2);
  CHECK(code2 == 0);
  CHECK_THAT(out2, Contains("4 runs of 2 RL steps; 4 finished already"));
  CHECK(out2.find("== dapo seed") == std::string::npos);

  // study.csv keeps what the table needs: another OUT that imports it reports the same table.
  CHECK_THAT(io::read_file(dir + "/out/study.csv"), Contains("\ngtpo_separate-s1,2,"));
  const auto [code4, out4] =
      shell(std::string("GTPO_BUILD_DIR=") + GTPO_BINARY_DIR + " bash " + GTPO_SOURCE_DIR +
            "/scripts/study.sh --report-only --steps 2 --out " + dir + "/imported --import " + dir +
            "/out/study.csv --methods 'dapo gtpo_separate' --seeds '0 1'");
  INFO(out4);
  CHECK(code4 == 0);
  CHECK(io::read_file(dir + "/imported/table.md") == table);

  // Bad input is a clear error.
  const auto [code3, out3] = shell(study + " --methods 'dapo nope'");
  CHECK(code3 == 2);
  CHECK_THAT(out3, Contains("unknown method 'nope'"));
  fs::remove_all(dir);
}

TEST_CASE("study.sh --report-only: means, t intervals and paired differences on known values", "[apps][study]") {
  // dapo ends at 0.5, 0.6, 0.7 and gtpo at 0.6, 0.6, 0.9 on seeds 0, 1, 2: dapo 0.600 ± 4.303 · 0.1 / √3,
  // gtpo 0.700 ± 4.303 · 0.1732 / √3, and gtpo − dapo = 0.1, 0, 0.2: 0.100 ± 0.248 with 2 wins and 1 tie.
  const std::string dir = testing::fresh_temp_dir("study_report");
  const std::map<std::string, std::vector<double>> finals = {{"dapo", {0.5, 0.6, 0.7}}, {"gtpo", {0.6, 0.6, 0.9}}};
  for (const auto& [method, accuracies] : finals) {
    for (size_t seed = 0; seed < accuracies.size(); ++seed) {
      const std::string run = dir + "/" + method + "-s" + std::to_string(seed);
      fs::create_directories(run);
      std::string metrics;
      for (int step = 1; step <= 2; ++step)
        metrics += nlohmann::json{{"step", step}, {"accuracy", 0.25 * step}, {"entropy_mean", 1.0 / step},
                                  {"response_length_mean", 100 + step}}.dump() + "\n";
      io::write_file_atomic(run + "/metrics.jsonl", metrics);
      io::write_file_atomic(run + "/eval.jsonl", nlohmann::json{{"step", 2}, {"problems", 10},
                                                                {"greedy_accuracy", accuracies[seed]},
                                                                {"pass@1", accuracies[seed] / 2},
                                                                {"greedy_mean_length", 50.0}}.dump() + "\n");
    }
  }
  io::write_file_atomic(dir + "/sft-eval.txt", "problems 10 | greedy accuracy 0.4000 | mean@2 0.3 | pass@1 0.3000 | 1.0s\n");
  const auto [code, out] = shell(std::string("GTPO_BUILD_DIR=") + GTPO_BINARY_DIR + " bash " + GTPO_SOURCE_DIR +
                                 "/scripts/study.sh --report-only --out " + dir + " --methods 'dapo gtpo' --seeds '0 1 2' --steps 2");
  INFO(out);
  REQUIRE(code == 0);
  const std::string table = io::read_file(dir + "/table.md");
  CHECK_THAT(table, Contains("greedy accuracy 0.400, pass@1 0.300"));
  CHECK_THAT(table, Contains("| dapo | 3 | 0.600 ± 0.248 | 0.300 ± 0.124 | 50.0 ± 0.0 |"));
  CHECK_THAT(table, Contains("| gtpo | 3 | 0.700 ± 0.430 | 0.350 ± 0.215 | 50.0 ± 0.0 |"));
  CHECK_THAT(table, Contains("| gtpo | 3 | 0.100 ± 0.248 | 2/1/0 | 0.050 ± 0.124 |"));
  // Curves: the 5-step window mean over seeds (step 2 averages steps 1 and 2).
  CHECK_THAT(table, Contains("| dapo | 0.25 / 1.000 / 101 | 0.38 / 0.750 / 102 |"));
  fs::remove_all(dir);
}

TEST_CASE("study.sh --dose: per-seed least-squares slopes and their t interval on known values",
          "[apps][study]") {
  // Doses 0, 1, 2; seed 0 ends at 0.5 0.6 0.7 (slope 0.1), seed 1 at 0.5 0.5 0.9 (0.2), seed 2 flat (0):
  // 0.100 ± 4.303 · 0.1 / √3 = 0.100 ± 0.248, and pass@1 (half of each) 0.050 ± 0.124.
  const std::string dir = testing::fresh_temp_dir("study_dose");
  const std::map<std::string, std::vector<double>> finals = {
      {"gtpo_a2_0", {0.5, 0.5, 0.6}}, {"gtpo_a2_0.3", {0.6, 0.5, 0.6}}, {"gtpo_a2_1", {0.7, 0.9, 0.6}}};
  for (const auto& [method, accuracies] : finals) {
    for (size_t seed = 0; seed < accuracies.size(); ++seed) {
      const std::string run = dir + "/" + method + "-s" + std::to_string(seed);
      fs::create_directories(run);
      std::string metrics;
      for (int step = 1; step <= 2; ++step)
        metrics +=
            nlohmann::json{
                {"step", step}, {"accuracy", 0.5}, {"entropy_mean", 0.1}, {"response_length_mean", 20}}
                .dump() +
            "\n";
      io::write_file_atomic(run + "/metrics.jsonl", metrics);
      io::write_file_atomic(run + "/eval.jsonl", nlohmann::json{{"step", 2},
                                                                {"problems", 10},
                                                                {"greedy_accuracy", accuracies[seed]},
                                                                {"pass@1", accuracies[seed] / 2}}
                                                         .dump() +
                                                     "\n");
    }
  }
  io::write_file_atomic(dir + "/sft-eval.txt",
                        "problems 10 | greedy accuracy 0.4000 | pass@1 0.3000 | 1.0s\n");
  const auto [code, out] = shell(std::string("GTPO_BUILD_DIR=") + GTPO_BINARY_DIR + " bash " +
                                 GTPO_SOURCE_DIR + "/scripts/study.sh --report-only --out " + dir +
                                 " --methods 'gtpo_a2_0 gtpo_a2_0.3 gtpo_a2_1' --seeds '0 1 2' --steps 2" +
                                 " --dose alpha2:gtpo_a2_0=0,gtpo_a2_0.3=1,gtpo_a2_1=2");
  INFO(out);
  REQUIRE(code == 0);
  const std::string table = io::read_file(dir + "/table.md");
  CHECK_THAT(table, Contains("Dose-response on alpha2"));
  CHECK_THAT(table, Contains("| greedy_accuracy | 3 | 0.100 ± 0.248 | 0: 0.533 ± 0.143"));
  CHECK_THAT(table, Contains("| pass@1 | 3 | 0.050 ± 0.124 |"));
  fs::remove_all(dir);
}
