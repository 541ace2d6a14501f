// gtpo bench: shapes, FLOP formulas, timing and memory helpers shared by the workloads.
#include <omp.h>
#include <sys/resource.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "apps/bench.h"
#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"
#ifdef GTPO_WITH_CUDA
#include "runtime/cuda/cuda_backend.h"
#include "runtime/cuda/cuda_device_info.h"
#endif
#include "runtime/config_codec.h"
#include "runtime/error.h"
#include "runtime/random.h"

namespace gtpo::apps::bench {

namespace {
// The model sections of torch_bench.py's SHAPES. Keys left out (intermediate_size, norm eps, tying) take
// model_config.cpp's defaults, which torch_bench.py copies: llama 704 untied, gpt2 3072 tied.
struct ShapeText {
  const char* name;
  const char* model_yaml;
  int64_t batch, seq;
  RolloutShape rollout;
  bool hidden;
};
const ShapeText kShapes[] = {
    {"small",
     "architecture: llama\nvocab_size: 512\nhidden_size: 256\nnum_hidden_layers: 4\nnum_attention_heads: 4\n"
     "num_key_value_heads: 4\nmax_position_embeddings: 256\n",
     16, 128, RolloutShape{}, false},
    {"gpt2-124m",
     "architecture: gpt2\nvocab_size: 50257\nhidden_size: 768\nnum_hidden_layers: 12\nnum_attention_heads: "
     "12\n"
     "max_position_embeddings: 1024\n",
     4, 64, RolloutShape{}, false},
    // GPU-sized (gtpo only, no torch_bench.py counterpart): GPT-2 124M trained at its full context, and a
    // rollout of 256 sequences (32 prompts x G 8, 32 prompt tokens, 128 new tokens). The default on cuda.
    {"gpt2-124m-1024",
     "architecture: gpt2\nvocab_size: 50257\nhidden_size: 768\nnum_hidden_layers: 12\nnum_attention_heads: "
     "12\n"
     "max_position_embeddings: 1024\n",
     8, 1024, RolloutShape{32, 8, 32, 128}, false},
    // GPU-sized (gtpo only): Qwen2.5-0.5B's shape with random weights (24 layers, hidden 896, 14 query and 2
    // key/value heads, vocabulary 151,936, tied head), trained at batch 8 x T 1024 (an 8,192-token
    // micro-batch) and rolled out as an RL step would: 256 sequences (32 prompts x G 8), 128 prompt tokens,
    // 512 new tokens.
    {"qwen2.5-0.5b",
     "architecture: qwen2\nvocab_size: 151936\nhidden_size: 896\nnum_hidden_layers: 24\nnum_attention_heads: "
     "14\n"
     "num_key_value_heads: 2\nintermediate_size: 4864\nmax_position_embeddings: 32768\nrope_theta: "
     "1000000.0\n"
     "rms_norm_eps: 1.0e-6\ntie_word_embeddings: true\n",
     8, 1024, RolloutShape{32, 8, 128, 512}, false},
    // For tests: seconds become milliseconds.
    {"tiny",
     "architecture: llama\nvocab_size: 64\nhidden_size: 32\nnum_hidden_layers: 2\nnum_attention_heads: 4\n"
     "num_key_value_heads: 2\nmax_position_embeddings: 64\n",
     2, 16, RolloutShape{2, 2, 4, 8}, true},
};
}  // namespace

ModelShape model_shape(const std::string& name) {
  for (const ShapeText& s : kShapes) {
    if (name != s.name) continue;
    ModelShape out;
    out.name = s.name;
    out.model = model::parse_model_config(YAML::Load(s.model_yaml), std::string("bench shape ") + s.name);
    out.batch = s.batch;
    out.seq = s.seq;
    out.rollout = s.rollout;
    return out;
  }
  fail("bench: unknown --shape '", name, "'; valid shapes: ", config::join(public_shape_names()));
}

std::vector<std::string> public_shape_names() {
  std::vector<std::string> names;
  for (const ShapeText& s : kShapes)
    if (!s.hidden) names.emplace_back(s.name);
  return names;
}

std::string default_shape(const std::string& workload, Device device) {
  if (device == Device::cuda && (workload == "train" || workload == "rollout")) return "gpt2-124m-1024";
  return "small";
}

namespace {
// Dense (no structured sparsity) peak tensor/vector throughput in TFLOP/s. Source: NVIDIA's H200 and H100
// datasheets (nvidia.com/en-us/data-center/h200, .../h100: SXM column; their TF32/BF16 figures are "with
// sparsity", halved here) and the A100 datasheet (.../a100, SXM). fp32 is the non-tensor-core FP32 peak,
// which is what an fp32 cuBLAS SGEMM can reach.
struct GpuPeak {
  const char* name_contains;
  double fp32, tf32, bf16;
};
const GpuPeak kGpuPeaks[] = {
    {"H200", 67.0, 495.0, 989.0},   // H200 SXM
    {"H100 80GB HBM3", 67.0, 495.0, 989.0},  // H100 SXM (the PCIe card reports "H100 PCIe")
    {"A100", 19.5, 156.0, 312.0},   // A100 SXM 40/80 GB
};
}  // namespace

double gpu_peak_flops(const std::string& gpu_name, MatmulPrecision precision) {
  for (const GpuPeak& p : kGpuPeaks) {
    if (gpu_name.find(p.name_contains) == std::string::npos) continue;
    const double tflops = precision == MatmulPrecision::fp32 ? p.fp32 : precision == MatmulPrecision::tf32 ? p.tf32 : p.bf16;
    return tflops * 1e12;
  }
  return 0.0;
}

int64_t matmul_params(const model::ModelConfig& c) {
  const int64_t C = c.hidden_size, D = c.head_dim(), H = c.num_attention_heads, KV = c.num_key_value_heads;
  const int64_t F = c.intermediate_size;
  const int64_t attn = C * (H + 2 * KV) * D + H * D * C;   // q, k, v and the output projection
  const int64_t mlp = c.is_gpt2() ? 2 * C * F : 3 * C * F;  // fc + proj, or gate + up + down
  return c.num_hidden_layers * (attn + mlp) + C * c.vocab_size;  // + the LM head, even when tied
}

double train_flops_per_token(const model::ModelConfig& c, int64_t seq) {
  return 6.0 * static_cast<double>(matmul_params(c)) +
         12.0 * static_cast<double>(c.num_hidden_layers * c.hidden_size * seq);
}

double rollout_flops(const model::ModelConfig& c, const RolloutShape& r) {
  const double N = static_cast<double>(matmul_params(c));
  const double LC = static_cast<double>(c.num_hidden_layers * c.hidden_size);
  double flops = 0.0;
  for (int64_t t = 0; t < r.prompt_len; ++t) flops += r.prompts * (2.0 * N + 4.0 * LC * static_cast<double>(t + 1));
  for (int64_t i = 1; i < r.new_tokens; ++i)
    flops += r.prompts * r.group * (2.0 * N + 4.0 * LC * static_cast<double>(r.prompt_len + i));
  return flops;
}

std::vector<double> time_runs(const std::function<void()>& fn, int64_t runs, int64_t warmup, const std::string& label,
                              Device device) {
  using Clock = std::chrono::steady_clock;
  Backend& backend = backend_for(device);
  for (int64_t i = 0; i < warmup; ++i) fn();
  if (backend.profiling()) backend.set_profiling(true);  // the profile covers the timed runs only
  std::vector<double> out;
  for (int64_t i = 0; i < runs; ++i) {
    backend.synchronize();
    const auto t0 = Clock::now();
    fn();
    backend.synchronize();
    out.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    std::fprintf(stderr, "  %s run %lld/%lld: %.1f ms\n", label.c_str(), static_cast<long long>(i + 1),
                 static_cast<long long>(runs), out.back() * 1e3);
  }
  return out;
}

double median(std::vector<double> v) {
  GTPO_CHECK(!v.empty(), "bench: median of no runs");
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);  // as Python's statistics.median
}

double current_rss_mb() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  f >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

std::vector<int32_t> random_tokens(uint64_t seed, uint64_t stream, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[static_cast<size_t>(i)] = static_cast<int32_t>(counter_hash(seed, stream, static_cast<uint64_t>(i)) %
                                                       static_cast<uint64_t>(vocab));
  return ids;
}

namespace {
size_t allocator_peak_bytes(Device device) {
#ifdef GTPO_WITH_CUDA
  if (device == Device::cuda)
    if (auto* cuda = dynamic_cast<cuda::CudaBackend*>(&backend_for(device))) return cuda->allocator_stats().peak_bytes_in_use;
#endif
  (void)device;
  return cpu_backend().allocator_stats().peak_bytes_in_use;
}

// --profile: each primitive's calls and time per timed run, and its share of the primitives' total.
nlohmann::json profile_json(const std::vector<PrimitiveTime>& times, const nlohmann::json& result) {
  const double runs = result.contains("runs") && result["runs"].is_array() && !result["runs"].empty()
                          ? static_cast<double>(result["runs"].size())
                          : 1.0;
  double total = 0.0;
  for (const PrimitiveTime& t : times) total += t.seconds;
  nlohmann::json out = nlohmann::json::array();
  for (const PrimitiveTime& t : times)
    out.push_back({{"primitive", t.name},
                   {"calls_per_run", static_cast<double>(t.calls) / runs},
                   {"ms_per_run", 1e3 * t.seconds / runs},
                   {"share", total > 0.0 ? t.seconds / total : 0.0}});
  return out;
}
}  // namespace

nlohmann::json run_workload(const Options& options) {
  Options o = options;
  if (!o.shape_given) o.shape = default_shape(o.workload, o.device);
  const std::vector<std::string> workloads = {"train", "rollout", "sgemm", "rlstep"};
  GTPO_CHECK(std::find(workloads.begin(), workloads.end(), o.workload) != workloads.end(), "bench: unknown --workload '",
             o.workload, "'; valid workloads: train, rollout, sgemm, rlstep");
  GTPO_CHECK(o.runs == -1 || o.runs >= 1, "bench: --runs must be >= 1, got ", o.runs);
  GTPO_CHECK(o.warmup == -1 || o.warmup >= 0, "bench: --warmup must be >= 0, got ", o.warmup);
  GTPO_CHECK(o.threads >= 0, "bench: --threads must be >= 0 (0 = default), got ", o.threads);
  GTPO_CHECK(o.config.empty() || o.workload == "rlstep", "bench: --config applies to --workload rlstep only");
  GTPO_CHECK(!o.profile || o.workload != "sgemm",
             "bench: --profile applies to train, rollout and rlstep (sgemm times one primitive already)");
  if (o.workload == "rlstep")
    GTPO_CHECK(!o.shape_given, "bench: rlstep takes no --shape; its model comes from the run config (--config)");
  if (o.workload == "rollout")
    GTPO_CHECK(o.shape != "gpt2-124m",
               "bench: rollout uses the small, gpt2-124m-1024 or qwen2.5-0.5b model, not gpt2-124m");
  if (o.workload != "sgemm" && o.workload != "rlstep") model_shape(o.shape);  // unknown shape: error before work
  if (o.threads > 0) omp_set_num_threads(o.threads);
  // Throws when the device is missing or the precision is not supported there (tf32/bf16 on the CPU).
  backend_for(o.device).configure(BackendOptions{o.precision, /*deterministic=*/true, o.exact_decode});

  nlohmann::json rec = {{"impl", "gtpo"},
                        {"workload", o.workload},
                        {"shape", nullptr},
                        {"threads", omp_get_max_threads()},
                        {"device", device_name(o.device)},
                        {"precision", matmul_precision_name(o.precision)},
                        {"deterministic", true},
                        {"exact_decode", o.exact_decode}};
#ifdef GTPO_WITH_CUDA
  if (o.device == Device::cuda) {
    o.gpu_name = cuda::device_info(0).name;
    rec["gpu"] = o.gpu_name;
  }
#endif
  if (o.workload == "train" || o.workload == "rollout") rec["shape"] = o.shape;
  Backend& backend = backend_for(o.device);
  backend.set_profiling(o.profile);
  nlohmann::json res = o.workload == "train"     ? bench_train(o)
                       : o.workload == "rollout" ? bench_rollout(o)
                       : o.workload == "sgemm"   ? bench_sgemm(o)
                                                 : bench_rlstep(o);
  if (o.workload == "rlstep") rec["shape"] = res["config"];
  if (o.profile) {
    res["profile"] = profile_json(backend.profile(), res);
    backend.set_profiling(false);
  }
  rec.update(res);
  const double peak = peak_rss_mb();
  rec["peak_rss_mb"] = peak;
  if (res.contains("baseline_rss_mb")) rec["peak_rss_delta_mb"] = peak - res["baseline_rss_mb"].get<double>();
  // The runtime's own view: the most tensor bytes live at once (RSS also counts code, Eigen's blocking
  // buffers and the allocator's cached free blocks).
  rec["allocator_peak_mb"] = static_cast<double>(allocator_peak_bytes(o.device)) / (1024.0 * 1024.0);
  return rec;
}

}  // namespace gtpo::apps::bench
