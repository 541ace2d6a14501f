// gtpo bench: benchmarks with the same workloads, shapes and fields as scripts/bench/torch_bench.py.
#include <cstdio>
#include <iostream>

#include "apps/args.h"
#include "apps/bench.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    {"--workload", true, "train, rollout, sgemm or rlstep (required)"},
    {"--shape", true,
     "small, gpt2-124m (train only), gpt2-124m-1024 or qwen2.5-0.5b (default: small; on cuda "
     "gpt2-124m-1024); "
     "sgemm: small or quickstart"},
    {"--threads", true, "OpenMP threads; 0 = the default (OMP_NUM_THREADS or every core)"},
    {"--runs", true, "timed runs; the median is reported (default 5, sgemm 7)"},
    {"--warmup", true, "untimed runs first (default 2)"},
    {"--quick", false, "3 timed runs after 1 warm-up (unless --runs / --warmup say otherwise)"},
    {"--seed", true, "seed of the random weights and token ids (default 0)"},
    {"--config", true, "rlstep: run config (default configs/quickstart.yaml when it exists, else built in)"},
    {"--teacher", true,
     "rlstep: distil from this model directory (teacher.path; its tokenizer must be the run's)"},
    {"--device", true,
     "cpu or cuda: where the model runs (default cpu); cuda synchronises around timed runs"},
    {"--precision", true, "fp32 (default), tf32 or bf16 GEMMs (tf32/bf16: --device cuda only)"},
    {"--token-choice", true,
     "rollout on cuda: host (default: the logits go to the host, which chooses) or device (the choice "
     "kernel; "
     "the same tokens)"},
    {"--profile", false,
     "also time every backend primitive over the timed runs (host time on the CPU, device time by CUDA "
     "events "
     "on cuda) and print where the time goes"},
    {"--exact-decode", false,
     "the CPU's decode attention in the training forward's order (train.exact_decode: the sampler's "
     "log-probs are the trainer's bit for bit)"},
    {"--json", false, "print one JSON line (the fields of torch_bench.py, \"impl\": \"gtpo\")"}};

const char* kDescription =
    "Times one workload and reports the median of the timed runs. Progress goes to stderr.\n\n"
    "workloads:\n"
    "  train    forward + next-token cross-entropy + backward + AdamW step (lr 1e-3, weight decay 0.1);\n"
    "           tokens/s = batch * T / median step time, GFLOP/s with 6N + 12LCT FLOPs per token\n"
    "  rollout  grouped sampling with a KV cache: 16 prompts x G 8, 32 random prompt tokens, 96 new tokens,\n"
    "           temperature 1, no end-of-sequence; tokens/s = generated tokens / seconds, plus decode-only\n"
    "  sgemm    GFLOP/s of ops::matmul on the training workloads' GEMM shapes (--shape small; the best is "
    "the\n"
    "           measured peak) or the quick-start RL update's, transposes included (--shape quickstart)\n"
    "  rlstep   one RL step (rollout, scoring, update) of a quick-start-like run on a fresh model,\n"
    "           dynamic sampling off so that every group is updated\n\n"
    "shapes:\n"
    "  small      llama: hidden 256, 4 layers, 4 heads (4 kv), intermediate 704, vocab 512, untied head;\n"
    "             train batch 16 x T 128\n"
    "  gpt2-124m  gpt2: hidden 768, 12 layers, 12 heads, vocab 50257, 1024 positions, tied head;\n"
    "             train batch 4 x T 64\n"
    "  gpt2-124m-1024  the same model at its full context (gtpo only, the default on cuda): train batch\n"
    "             8 x T 1024; rollout 256 sequences (32 prompts x G 8, 32 prompt tokens, 128 new tokens)\n"
    "  qwen2.5-0.5b  Qwen2.5-0.5B's shape, random weights (gtpo only): qwen2, hidden 896, 24 layers, 14 "
    "heads\n"
    "             (2 kv), intermediate 4864, vocab 151936, tied head; train batch 8 x T 1024; rollout 256\n"
    "             sequences (32 prompts x G 8, 128 prompt tokens, 512 new tokens)\n\n"
    "on cuda:\n"
    "  train also reports MFU = (6N + 12 L C T) * tokens/s / the GPU's dense peak at --precision, where N\n"
    "  counts the weights that enter a matmul (LM head included) and 12LCT is attention's QK^T and AV\n"
    "  (forward + backward, causal mask not discounted). Peaks (TFLOP/s, fp32/tf32/bf16): H200 and H100\n"
    "  SXM 67/495/989, A100 19.5/156/312 (NVIDIA datasheets, dense); another GPU gets mfu null.\n\n"
    "Weights are random (init_weights(seed)). Peak memory is the process's ru_maxrss, so run one workload\n"
    "per process (scripts/bench/run.sh does); allocator_peak_mb is the most tensor memory live at once.";

// --profile's table: the primitives by time per timed run, the smallest folded into one line.
void print_profile(const nlohmann::json& profile) {
  constexpr size_t kShown = 16;
  std::printf("  primitives, per timed run:\n    %-26s %10s %11s %7s\n", "primitive", "calls", "ms", "share");
  double rest_ms = 0.0, rest_share = 0.0;
  for (size_t i = 0; i < profile.size(); ++i) {
    const nlohmann::json& p = profile[i];
    if (i >= kShown) {
      rest_ms += p["ms_per_run"].get<double>();
      rest_share += p["share"].get<double>();
      continue;
    }
    std::printf("    %-26s %10.1f %11.3f %6.1f%%\n", p["primitive"].get<std::string>().c_str(),
                p["calls_per_run"].get<double>(), p["ms_per_run"].get<double>(),
                100.0 * p["share"].get<double>());
  }
  if (profile.size() > kShown)
    std::printf("    %-26s %10s %11.3f %6.1f%%\n", "(the others)", "", rest_ms, 100.0 * rest_share);
  std::fflush(stdout);
}

void print_human(const nlohmann::json& r) {
  auto num = [&](const char* key) { return r.contains(key) && r[key].is_number() ? r[key].get<double>() : 0.0; };
  std::cout << "gtpo bench " << r["workload"].get<std::string>();
  if (r["shape"].is_string()) std::cout << ' ' << r["shape"].get<std::string>();  // (" " + s trips GCC 12's -Wrestrict)
  std::cout << ", " << r["threads"].get<int>() << " threads";
  if (r.value("device", "cpu") != "cpu")
    std::cout << ", " << r["device"].get<std::string>() << ' ' << r.value("gpu", std::string("?")) << ' '
              << r["precision"].get<std::string>();
  std::cout << "\n";
  char buf[256];
  const std::string w = r["workload"].get<std::string>();
  if (w == "train") {
    std::snprintf(buf, sizeof buf, "  %.1f tok/s (step %.1f ms), %.1f GFLOP/s, loss %.4f -> %.4f\n",
                  num("tokens_per_s"), num("step_s") * 1e3, num("gflops"), num("loss_first"), num("loss_last"));
    if (r.contains("mfu") && r["mfu"].is_number()) {
      std::cout << buf;
      std::snprintf(buf, sizeof buf, "  MFU %.1f%% of %.0f TFLOP/s\n", 100.0 * num("mfu"), num("peak_tflops"));
    }
  } else if (w == "rollout") {
    std::snprintf(buf, sizeof buf, "  %.1f tok/s (%.1f ms: prefill %.1f, decode %.1f), decode %.1f tok/s, %.1f GFLOP/s\n",
                  num("tokens_per_s"), num("rollout_s") * 1e3, num("prefill_s") * 1e3, num("decode_s") * 1e3,
                  num("decode_tokens_per_s"), num("gflops"));
    std::cout << buf;
    std::snprintf(buf, sizeof buf, "  decode by part: forward %.1f ms, logits to host %.1f, token choice %.1f, "
                  "log-probs %.1f\n", num("decode_forward_s") * 1e3, num("decode_logits_to_host_s") * 1e3,
                  num("decode_choose_s") * 1e3, num("decode_logprob_s") * 1e3);
  } else if (w == "sgemm") {
    std::string per;
    for (const auto& s : r["shapes"]) {
      char line[128];
      std::snprintf(line, sizeof line, "    %lldx%lldx%lld: %.1f GFLOP/s\n", s["m"].get<long long>(),
                    s["k"].get<long long>(), s["n"].get<long long>(), s["gflops"].get<double>());
      per += line;
    }
    std::cout << per;
    std::snprintf(buf, sizeof buf, "  peak %.1f GFLOP/s\n", num("gflops"));
  } else {
    std::snprintf(buf, sizeof buf,
                  "  step %.1f ms: rollout %.1f ms (%.1f tok/s), scoring %.2f ms, update %.1f ms (%.1f tok/s); "
                  "%.1f generated tok/s overall\n",
                  num("step_s") * 1e3, num("rollout_s") * 1e3, num("rollout_tokens_per_s"), num("scoring_s") * 1e3,
                  num("update_s") * 1e3, num("update_tokens_per_s"), num("tokens_per_s"));
  }
  std::cout << buf;
  std::snprintf(buf, sizeof buf, "  peak RSS %.1f MB, allocator peak %.1f MB\n", num("peak_rss_mb"),
                num("allocator_peak_mb"));
  std::cout << buf;
  if (r.contains("profile")) print_profile(r["profile"]);
  std::cout << std::flush;
}
}  // namespace

int run_bench(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo bench --workload W [--shape S] [--device cpu|cuda] [--precision P] [--threads N]\n"
          "                  [--runs R] [--warmup W] [--token-choice host|device] [--profile] [--json]",
          kDescription))
    return 0;
  args.reject_unused("bench", false, false);
  bench::Options o;
  o.workload = args.require("--workload");
  o.shape_given = args.has("--shape");
  o.shape = args.get("--shape", "");
  o.threads = static_cast<int>(args.get_int("--threads", 0));
  const bool quick = args.has("--quick");
  o.runs = args.get_int("--runs", quick ? 3 : -1);
  o.warmup = args.get_int("--warmup", quick ? 1 : -1);
  GTPO_CHECK(!args.has("--runs") || o.runs >= 1, "bench: --runs must be >= 1, got ", o.runs);
  GTPO_CHECK(!args.has("--warmup") || o.warmup >= 0, "bench: --warmup must be >= 0, got ", o.warmup);
  o.seed = static_cast<uint64_t>(args.get_int("--seed", 0));
  o.config = args.get("--config", "");
  o.teacher = args.get("--teacher", "");
  GTPO_CHECK(o.teacher.empty() || o.workload == "rlstep",
             "bench: --teacher applies to --workload rlstep only");
  o.device = device_from(args);
  if (args.has("--precision")) o.precision = parse_precision("--precision", args.get("--precision", ""));
  o.profile = args.has("--profile");
  o.exact_decode = args.has("--exact-decode");
  if (args.has("--token-choice")) {
    const std::string where = args.get("--token-choice", "");
    GTPO_CHECK(where == "host" || where == "device", "bench: --token-choice must be host or device, got '",
               where, "'");
    GTPO_CHECK(
        o.workload == "rollout" && o.device == Device::cuda,
        "bench: --token-choice applies to --workload rollout on --device cuda only (the CPU chooses where "
        "its logits are)");
    o.choose_on_device = where == "device";
  }
  const nlohmann::json rec = bench::run_workload(o);
  if (args.has("--json"))
    std::cout << rec.dump() << std::endl;
  else
    print_human(rec);
  return 0;
}

}  // namespace gtpo::apps
