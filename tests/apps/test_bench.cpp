// gtpo bench on the hidden tiny shape: the JSON line carries torch_bench.py's fields, with positive values,
// and the FLOP count matches torch_bench.py's for the small shape.
#include <catch2/catch.hpp>

#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/bench.h"
#include "apps/commands.h"

using nlohmann::json;
using Catch::Contains;

namespace {
// Runs `gtpo bench ARGS --json` through run_bench and parses its one line of stdout.
json bench_json(std::vector<std::string> args) {
  args.insert(args.begin(), "bench");
  args.push_back("--json");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::ostringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  int code = 0;
  try {
    code = gtpo::apps::run_bench(static_cast<int>(argv.size()), argv.data());
  } catch (...) {
    std::cout.rdbuf(old);
    throw;
  }
  std::cout.rdbuf(old);
  REQUIRE(code == 0);
  const std::string text = out.str();
  REQUIRE(std::count(text.begin(), text.end(), '\n') == 1);
  return json::parse(text);
}

void check_positive(const json& j, const char* key) {
  INFO(key);
  REQUIRE(j.contains(key));
  REQUIRE(j[key].is_number());
  CHECK(j[key].get<double>() > 0.0);
}
}  // namespace

TEST_CASE("apps: bench sgemm and train report torch_bench.py's fields", "[apps][bench]") {
  const json sgemm = bench_json({"--workload", "sgemm", "--shape", "tiny", "--runs", "1", "--warmup", "0"});
  CHECK(sgemm["impl"] == "gtpo");
  CHECK(sgemm["workload"] == "sgemm");
  CHECK(sgemm["shape"].is_null());
  CHECK(sgemm["tokens_per_s"].is_null());
  for (const char* k : {"threads", "gflops", "peak_rss_mb"}) check_positive(sgemm, k);
  REQUIRE(sgemm["runs"].size() == 1);
  CHECK(sgemm["shapes"].size() == 2);
  // The quick-start update's products, with their transposes.
  const json rl =
      bench_json({"--workload", "sgemm", "--shape", "quickstart", "--runs", "1", "--warmup", "0"});
  REQUIRE(rl["shapes"].size() == 11);
  CHECK(rl["shapes"][0]["trans_b"] == true);
  CHECK(rl["shapes"][6]["trans_a"] == true);
  for (const json& shape : rl["shapes"]) {
    CHECK(shape["gflops"].get<double>() > 0.0);
    CHECK(shape["eigen_gflops"].get<double>() > 0.0);  // the side-by-side with Eigen's tiles
  }

  const json train = bench_json({"--workload", "train", "--shape", "tiny", "--runs", "1", "--warmup", "0", "--threads", "1"});
  CHECK(train["impl"] == "gtpo");
  CHECK(train["workload"] == "train");
  CHECK(train["shape"] == "tiny");
  CHECK(train["threads"] == 1);
  for (const char* k : {"tokens_per_s", "gflops", "peak_rss_mb", "step_s", "flops_per_token", "allocator_peak_mb",
                        "loss_first"})
    check_positive(train, k);
  REQUIRE(train["runs"].size() == 1);
  CHECK(train["tokens_per_step"] == 2 * 16);
}

TEST_CASE("apps: bench FLOPs follow torch_bench.py and bad flags are errors", "[apps][bench]") {
  namespace b = gtpo::apps::bench;
  // torch_bench.py's Transformer(small).matmul_params(): 4 * (768*256 + 256*256 + 1408*256 + 704*256) + 512*256.
  CHECK(b::matmul_params(b::model_shape("small").model) == 3342336);
  CHECK(b::model_shape("small").model.intermediate_size == 704);
  // gpt2: 12 * 12 C^2 + the tied head, counted once more.
  CHECK(b::matmul_params(b::model_shape("gpt2-124m").model) == 12 * 12 * 768 * 768 + 768 * 50257);
  CHECK(b::train_flops_per_token(b::model_shape("small").model, 128) == 6.0 * 3342336 + 12.0 * 4 * 256 * 128);
  // Qwen2.5-0.5B's shape: 24 x (2 x 896^2 + 2 x 896 x 128 + 3 x 896 x 4864) + the tied head 896 x 151936 (its
  // 494M parameters less norms and biases; the embedding is the head).
  const b::ModelShape qwen = b::model_shape("qwen2.5-0.5b");
  CHECK(b::matmul_params(qwen.model) ==
        24LL * (2 * 896 * 896 + 2 * 896 * 128 + 3 * 896 * 4864) + 896LL * 151936);
  CHECK(qwen.model.attention_bias);
  CHECK(qwen.rollout.prompts * qwen.rollout.group == 256);
  CHECK(qwen.rollout.new_tokens == 512);

  CHECK_THROWS_WITH(bench_json({"--workload", "nope"}), Contains("valid workloads"));
  CHECK_THROWS_WITH(bench_json({"--workload", "train", "--shape", "huge"}), Contains("valid shapes: small, gpt2-124m"));
  CHECK_THROWS_WITH(bench_json({"--workload", "train", "--runs", "0"}), Contains("--runs must be >= 1"));
  CHECK_THROWS_WITH(bench_json({"--workload", "rlstep", "--shape", "small"}), Contains("rlstep takes no --shape"));
  CHECK_THROWS_WITH(bench_json({"--workload", "sgemm", "--shape", "huge"}),
                    Contains("sgemm --shape must be small (the training workloads' products), quickstart"));
}

TEST_CASE("apps: bench --profile times every primitive of the timed runs, and --token-choice is for cuda",
          "[apps][bench]") {
  const json plain = bench_json({"--workload", "train", "--shape", "tiny", "--runs", "1", "--warmup", "0"});
  CHECK_FALSE(plain.contains("profile"));
  const json train =
      bench_json({"--workload", "train", "--shape", "tiny", "--runs", "2", "--warmup", "1", "--profile"});
  REQUIRE(train["profile"].is_array());
  double share = 0.0, ms = 0.0;
  std::map<std::string, double> calls;
  for (const json& p : train["profile"]) {
    calls[p["primitive"].get<std::string>()] = p["calls_per_run"].get<double>();
    share += p["share"].get<double>();
    ms += p["ms_per_run"].get<double>();
  }
  CHECK(share == Approx(1.0));
  CHECK(ms <= train["step_s"].get<double>() * 1e3 * 1.5);  // within a step (medians: some slack)
  // A training step: products forward and backward, a loss, and one AdamW call per parameter tensor.
  CHECK(calls["gemm"] >= 3);
  CHECK(calls["cross_entropy_forward"] == 1);
  CHECK(calls["cross_entropy_backward"] == 1);
  CHECK(calls["adamw_step"] >= 4);
  CHECK(gtpo::backend_for(gtpo::Device::cpu).profiling() == false);  // switched off after the run

  const json rollout =
      bench_json({"--workload", "rollout", "--shape", "tiny", "--runs", "1", "--warmup", "0"});
  CHECK(rollout["token_choice"] == "cpu");
  CHECK(rollout["tokens_digest"].get<std::string>().size() == 16);
  const json again = bench_json({"--workload", "rollout", "--shape", "tiny", "--runs", "1", "--warmup", "0"});
  CHECK(again["tokens_digest"] == rollout["tokens_digest"]);  // the same seed, the same tokens
  CHECK_THROWS_WITH(bench_json({"--workload", "sgemm", "--profile"}), Contains("--profile applies to train"));
  CHECK_THROWS_WITH(bench_json({"--workload", "rollout", "--token-choice", "device"}),
                    Contains("--token-choice applies to --workload rollout on --device cuda only"));
}
