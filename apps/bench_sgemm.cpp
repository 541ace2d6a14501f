// gtpo bench sgemm: GFLOP/s of ops::matmul (the CPU backend's Eigen tiles) on the GEMM shapes of the two
// training workloads, as torch_bench.py's bench_sgemm; the best shape is the machine's measured peak.
#include <cstdio>

#include "apps/bench.h"
#include "runtime/autograd.h"
#include "runtime/cpu/cpu_gemm_eigen.h"
#include "runtime/ops/matmul.h"
#include "runtime/random.h"

namespace gtpo::apps::bench {

namespace {
struct Gemm {
  int64_t m, k, n;  // C[m, n] = op(A)[m, k] @ op(B)[k, n]
  bool trans_a = false, trans_b = false;
};
// torch_bench.py's SGEMM_SHAPES: the matmuls of the small and gpt2-124m training steps, plus a square one.
const std::vector<Gemm> kShapes = {{2048, 256, 768},  {2048, 256, 1408}, {2048, 704, 256},
                                   {2048, 256, 512},  {256, 768, 2304},  {256, 768, 3072},
                                   {256, 3072, 768},  {256, 768, 50257}, {1024, 1024, 1024}};
const std::vector<Gemm> kTinyShapes = {{64, 32, 48}, {32, 64, 32}};
// The quick start's RL update (hidden 64, intermediate 192, ~3,840 rows per update): each layer's forward
// (x W^T), input gradient (dY W) and weight gradient (dY^T X) products, and a decode step's projections.
const std::vector<Gemm> kQuickstartShapes = {{3840, 64, 192, false, true},
                                             {3840, 192, 64, false, true},
                                             {3840, 64, 64, false, true},
                                             {3840, 64, 32, false, true},
                                             {3840, 192, 64},
                                             {3840, 64, 192},
                                             {192, 3840, 64, true, false},
                                             {64, 3840, 192, true, false},
                                             {32, 3840, 64, true, false},
                                             {128, 64, 192, false, true},
                                             {128, 64, 32, false, true}};

Tensor random_matrix(uint64_t seed, uint64_t stream, int64_t rows, int64_t cols, Device device) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(counter_normal(seed, stream, i));
  return Tensor::from_vector(v, {rows, cols}, device);
}
}  // namespace

nlohmann::json bench_sgemm(const Options& o) {
  NoGradGuard no_grad;
  GTPO_CHECK(
      o.shape == "small" || o.shape == "tiny" || o.shape == "quickstart",
      "bench: sgemm --shape must be small (the training workloads' products), quickstart (the quick-start RL "
      "update's, with transposes) or tiny; got '",
      o.shape, "'");
  const std::vector<Gemm>& shapes =
      o.shape == "tiny" ? kTinyShapes : (o.shape == "quickstart" ? kQuickstartShapes : kShapes);
  const int64_t runs = o.runs > 0 ? o.runs : 7, warmup = o.warmup >= 0 ? o.warmup : 2;
  std::fprintf(stderr, "gtpo: sgemm, %lld timed runs after %lld warm-up per shape\n", static_cast<long long>(runs),
               static_cast<long long>(warmup));
  const double baseline = current_rss_mb();
  nlohmann::json results = nlohmann::json::array();
  size_t best = 0;
  for (size_t si = 0; si < shapes.size(); ++si) {
    const Gemm& s = shapes[si];
    const Tensor a = s.trans_a ? random_matrix(o.seed, 2 * si, s.k, s.m, o.device)
                               : random_matrix(o.seed, 2 * si, s.m, s.k, o.device);
    const Tensor b = s.trans_b ? random_matrix(o.seed, 2 * si + 1, s.n, s.k, o.device)
                               : random_matrix(o.seed, 2 * si + 1, s.k, s.n, o.device);
    const double flop = 2.0 * static_cast<double>(s.m * s.k * s.n);
    // As torch_bench.py: repeat inside one timed run so that a run lasts >= ~20 ms at 100 GFLOP/s (on a
    // GPU, >= ~20 ms at 50 TFLOP/s).
    const double work = o.device == Device::cuda ? 1e12 : 2e9;
    const int64_t reps = std::max<int64_t>(1, static_cast<int64_t>(work / flop));
    auto run = [&] {
      for (int64_t i = 0; i < reps; ++i) {
        Tensor c = ops::matmul(a, b, s.trans_a, s.trans_b);  // output from the caching allocator
      }
    };
    const char* op = s.trans_a ? (s.trans_b ? " TT" : " TN") : (s.trans_b ? " NT" : "");
    char label[96];
    std::snprintf(label, sizeof label, "sgemm %lldx%lldx%lld%s x%lld", static_cast<long long>(s.m),
                  static_cast<long long>(s.k), static_cast<long long>(s.n), op, static_cast<long long>(reps));
    const std::vector<double> seconds = time_runs(run, runs, warmup, label, o.device);
    nlohmann::json per_run = nlohmann::json::array();
    for (double t : seconds) per_run.push_back(flop * static_cast<double>(reps) / t / 1e9);
    const double g = flop * static_cast<double>(reps) / median(seconds) / 1e9;
    std::fprintf(stderr, "sgemm %lldx%lldx%lld%s: %.1f GFLOP/s\n", static_cast<long long>(s.m),
                 static_cast<long long>(s.k), static_cast<long long>(s.n), op, g);
    nlohmann::json row = {
        {"m", s.m},    {"k", s.k},       {"n", s.n}, {"trans_a", s.trans_a}, {"trans_b", s.trans_b},
        {"gflops", g}, {"runs", per_run}};
    if (o.shape == "quickstart" && o.device == Device::cpu) {
      // The same product on Eigen's tiles (what the CPU backend used for every GEMM before its own kernel),
      // timed the same way, for the side-by-side of docs/performance.md.
      Tensor c = Tensor::empty(Shape{s.m, s.n}, o.device);
      const GemmArgs args{.trans_a = s.trans_a,
                          .trans_b = s.trans_b,
                          .m = s.m,
                          .n = s.n,
                          .k = s.k,
                          .a = a.data(),
                          .lda = s.trans_a ? s.m : s.k,
                          .b = b.data(),
                          .ldb = s.trans_b ? s.k : s.n,
                          .c = c.data(),
                          .ldc = s.n};
      auto run_eigen = [&] {
        for (int64_t i = 0; i < reps; ++i) gemm_eigen_tiles(args);
      };
      const double ge = flop * static_cast<double>(reps) /
                        median(time_runs(run_eigen, runs, warmup, std::string(label) + " eigen", o.device)) /
                        1e9;
      std::fprintf(stderr, "  on Eigen's tiles: %.1f GFLOP/s (%.2fx)\n", ge, g / ge);
      row["eigen_gflops"] = ge;
    }
    results.push_back(row);
    if (g > results[best]["gflops"].get<double>()) best = si;
  }
  const nlohmann::json& top = results[best];
  return {{"tokens_per_s", nullptr},
          {"gflops", top["gflops"]},
          {"runs", top["runs"]},
          {"peak_shape", {top["m"], top["k"], top["n"]}},
          {"shapes", results},
          {"baseline_rss_mb", baseline}};
}

}  // namespace gtpo::apps::bench
