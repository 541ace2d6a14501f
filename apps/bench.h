// gtpo bench: the gtpo side of the PyTorch comparison (issue 7; scripts/bench/torch_bench.py is the other).
//
// Every workload builds the same model, with the same shapes and the same FLOP formula, as torch_bench.py,
// and returns one JSON object with the same fields ("impl": "gtpo"), so scripts/bench/compare.py can put
// the two side by side. Peak memory is the process's ru_maxrss: run each workload in a fresh process.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "runtime/backend.h"

namespace gtpo::apps::bench {

struct Options {
  std::string workload;          // train, rollout, sgemm, rlstep
  std::string shape = "small";   // small, gpt2-124m (train only); tiny (hidden, for tests)
  bool shape_given = false;
  int threads = 0;               // 0: OpenMP's default
  int64_t runs = -1;             // timed runs; -1: the workload's default (as torch_bench.py)
  int64_t warmup = -1;           // untimed runs first; -1: the workload's default
  uint64_t seed = 0;             // weights and token ids
  std::string config;            // rlstep: run config; empty = configs/quickstart.yaml or a built-in one
  std::string teacher;           // rlstep: teacher.path (on-policy distillation), empty = the config's
  Device device = Device::cpu;   // where the model runs; cuda also reports MFU (train)
  MatmulPrecision precision = MatmulPrecision::fp32;  // tf32/bf16: cuda only
  bool choose_on_device = false;  // rollout on cuda: model::SamplingOptions::choose_on_device
  bool profile = false;           // per-primitive times of the timed runs (Backend::set_profiling)
  bool exact_decode = false;      // BackendOptions::exact_decode (the CPU's decode attention)
  std::string gpu_name;          // filled in by run_workload on cuda (picks the MFU peak)
};

// The shape a workload uses when --shape is not given: small on the CPU; on cuda, train and rollout use
// gpt2-124m-1024 (GPT-2 124M at T = 1024; 256 rollout sequences).
std::string default_shape(const std::string& workload, Device device);

// Dense peak FLOP/s of a GPU at a matmul precision, from its name; 0 when the GPU is not in the table.
double gpu_peak_flops(const std::string& gpu_name, MatmulPrecision precision);

// Rollout sizes: prompts x group samples, prompt_len random prompt tokens, new_tokens generated each.
struct RolloutShape {
  int64_t prompts = 16, group = 8, prompt_len = 32, new_tokens = 96;
};

struct ModelShape {
  std::string name;
  model::ModelConfig model;
  int64_t batch = 0, seq = 0;  // training batch: batch rows of seq tokens, loss at every position
  RolloutShape rollout;
};

// The shapes of torch_bench.py's SHAPES (parsed through the model config so defaults such as
// intermediate_size come from model_config.cpp), plus a hidden "tiny" for tests. Throws on unknown names.
ModelShape model_shape(const std::string& name);
std::vector<std::string> public_shape_names();

// FLOPs with torch_bench.py's convention: N = weights that enter a matmul (every projection and the LM
// head, tied or not; not embedding tables, norms or biases).
int64_t matmul_params(const model::ModelConfig& c);
// A training step per token: 6N + 12 L C T.
double train_flops_per_token(const model::ModelConfig& c, int64_t seq);
// A whole rollout: prefill of the shared prompts (causal context) and (new_tokens - 1) decode steps per row.
double rollout_flops(const model::ModelConfig& c, const RolloutShape& r);

// Runs fn warmup times untimed, then runs times, logging each to stderr; returns the seconds of each.
// `device` is synchronised before and after every timed run, so queued GPU work is counted where it runs.
std::vector<double> time_runs(const std::function<void()>& fn, int64_t runs, int64_t warmup, const std::string& label,
                              Device device = Device::cpu);
double median(std::vector<double> v);
double current_rss_mb();  // resident now, from /proc/self/statm
double peak_rss_mb();     // ru_maxrss

// Fixed-seed token ids in [0, vocab).
std::vector<int32_t> random_tokens(uint64_t seed, uint64_t stream, int64_t n, int64_t vocab);

// The workloads. Each returns the workload-specific fields; run_workload adds the common ones.
nlohmann::json bench_train(const Options& o);
nlohmann::json bench_rollout(const Options& o);
nlohmann::json bench_sgemm(const Options& o);
nlohmann::json bench_rlstep(const Options& o);

// Validates o, sets the thread count, prepares the device, runs the workload and returns the full record:
// impl, workload, shape, threads, device, precision (and gpu, on cuda), the workload's fields, peak_rss_mb,
// peak_rss_delta_mb and allocator_peak_mb (of the device's allocator).
nlohmann::json run_workload(const Options& o);

}  // namespace gtpo::apps::bench
