// Primitive-level parity: every Backend primitive (runtime/backend.h) called directly on CPU buffers and on
// device buffers filled from the same random inputs; outputs compared with a tolerance stated per primitive
// (cuda_test.h: rel * |ref_i| + norm * max|ref| + bound_rel * bound_i). Sizes include the awkward ones:
// 1, 31, 33 (around a warp), 1000+ (several blocks), and a GPT-2 vocabulary of 50257.
//
// Tolerances, fp32 unless stated:
//   memory, layout (copy, copy_2d, permute, fill, expand_axis), embedding forward   bitwise
//   unary / binary                                   rel 1e-5 (backward 2e-5), abs floor 1e-6 of max
//   reductions (reduce_sum, norms' weight grads, embedding backward)  1e-4 relative to sum |terms|
//   sum_squares                                      1e-6 relative (positive terms; squares may round in fp32)
//   GEMM fp32 / tf32 / bf16                          1e-4 / 4e-3 / 1e-2 of (|alpha| |A| |B| + |beta| |C|)_ij
//   softmax, norms, losses forward                   rel 1e-5 with a 1e-6 of max floor
//   their backward                                   rel 1e-4 with a 1e-5 of max floor (row reductions)
//   attention                                        test_cuda_attention.cpp
//   AdamW                                            rel 1e-6 (m, v), param 1e-6 with a 1e-7 of max floor
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "runtime/backend.h"
#include "runtime/ops/sampling.h"
#include "tests/cuda/cuda_test.h"
#include "tests/cuda/primitive_buffers.h"
#include "tests/support/random.h"

using namespace gtpo;
using namespace gtpo::testing;

namespace {

constexpr int64_t kVocab = 50257;

std::vector<int32_t> ids(int64_t n, uint64_t seed, int32_t vocab) {
  TestRng rng(seed);
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t& x : v) x = rng.integer(0, vocab);
  return v;
}
// "[rows, cols]" (through a stream: GCC 12 warns falsely on "[" + std::to_string(...)).
std::string dims(int64_t rows, int64_t cols) {
  std::ostringstream os;
  os << "[" << rows << ", " << cols << "]";
  return os.str();
}

std::vector<float> abs_of(std::vector<float> v) {
  for (float& x : v) x = std::abs(x);
  return v;
}

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: return "neg";
    case UnaryOp::exp: return "exp";
    case UnaryOp::log: return "log";
    case UnaryOp::relu: return "relu";
    case UnaryOp::gelu_tanh: return "gelu_tanh";
    case UnaryOp::silu: return "silu";
    case UnaryOp::sigmoid: return "sigmoid";
    case UnaryOp::tanh: return "tanh";
    case UnaryOp::sqrt: return "sqrt";
    case UnaryOp::square: return "square";
    case UnaryOp::reciprocal: return "reciprocal";
    case UnaryOp::scale: return "scale";
    case UnaryOp::add_scalar: return "add_scalar";
    case UnaryOp::pow_scalar: return "pow_scalar";
  }
  return "?";
}

// ---- GEMM ------------------------------------------------------------------------------------------
struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  int64_t batch = 1;
  int64_t pad = 0;    // extra elements at the end of every stored row (ld > row length)
  int64_t extra = 0;  // extra elements between batch entries (stride > rows * ld)
  float alpha = 1.0f, beta = 0.0f;
};

struct GemmData {
  GemmArgs args;  // pointers unset
  std::vector<float> a, b, c;
};

GemmData make_gemm(const GemmCase& g, uint64_t seed) {
  GemmData d;
  GemmArgs& x = d.args;
  x.trans_a = g.ta;
  x.trans_b = g.tb;
  x.m = g.m;
  x.n = g.n;
  x.k = g.k;
  x.alpha = g.alpha;
  x.beta = g.beta;
  x.batch = g.batch;
  const int64_t rows_a = g.ta ? g.k : g.m, cols_a = g.ta ? g.m : g.k;
  const int64_t rows_b = g.tb ? g.n : g.k, cols_b = g.tb ? g.k : g.n;
  x.lda = cols_a + g.pad;
  x.ldb = cols_b + g.pad;
  x.ldc = g.n + g.pad;
  x.stride_a = rows_a * x.lda + g.extra;
  x.stride_b = rows_b * x.ldb + g.extra;
  x.stride_c = g.m * x.ldc + g.extra;
  d.a = values((g.batch - 1) * x.stride_a + rows_a * x.lda, seed);
  d.b = values((g.batch - 1) * x.stride_b + rows_b * x.ldb, seed + 1);
  d.c = values((g.batch - 1) * x.stride_c + g.m * x.ldc, seed + 2);  // padding must survive untouched
  return d;
}

std::vector<float> run_gemm(const GemmData& data, Device d, bool absolute = false) {
  GemmData in = data;
  if (absolute) {
    in.a = abs_of(in.a);
    in.b = abs_of(in.b);
    in.c = abs_of(in.c);
    in.args.alpha = std::abs(in.args.alpha);
    in.args.beta = std::abs(in.args.beta);
  }
  Tensor a = up(in.a, d), b = up(in.b, d), c = up(in.c, d);
  GemmArgs args = in.args;
  args.a = a.data();
  args.b = b.data();
  args.c = c.data();
  backend_for(d).gemm(args);
  return c.to_vector();
}

std::string gemm_label(const GemmCase& g) {
  std::ostringstream os;
  os << "gemm m=" << g.m << " n=" << g.n << " k=" << g.k << (g.ta ? " A^T" : "") << (g.tb ? " B^T" : "")
     << " batch=" << g.batch << " pad=" << g.pad << " alpha=" << g.alpha << " beta=" << g.beta;
  return os.str();
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> cases = {
      {1, 1, 1, false, false},
      {1, 1, 1000, false, false},
      {33, 31, 1031, false, false},
      {8, kVocab, 64, false, true},   // LM head: h [8, 64] @ W^T, W [V, 64]
      {kVocab, 64, 8, true, false},   // its weight gradient: g^T [V, 8] @ h [8, 64]
      {128, 96, 1000, false, false, 1, 0, 0, 0.5f, 0.25f},
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cases.push_back({31, 33, 17, ta, tb});
      cases.push_back({17, 31, 33, ta, tb, 3, 5, 7, 0.5f, 0.75f});  // batched, padded rows, gaps between entries
    }
  return cases;
}

// x rounded to nearest-even with `mantissa_bits` explicit bits (tf32: 10, bf16: 7), as the GPU rounds
// GEMM inputs in those modes.
float round_mantissa(float x, int mantissa_bits) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const int drop = 23 - mantissa_bits;
  const uint32_t half = 1u << (drop - 1), lsb = (u >> drop) & 1u;
  u = ((u + half - 1 + lsb) >> drop) << drop;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// emulate: instead of the device, the CPU GEMM on inputs rounded as `precision` rounds them (used where
// the CPU stands in, to check that the tf32/bf16 allowances hold for that rounding).
void check_gemm(Device dev, MatmulPrecision precision, double bound_rel, bool emulate = false) {
  uint64_t seed = 100;
  for (const GemmCase& g : gemm_cases()) {
    const GemmData data = make_gemm(g, seed += 10);
    const std::vector<float> ref = run_gemm(data, Device::cpu);
    const std::vector<float> bound = run_gemm(data, Device::cpu, /*absolute=*/true);
    std::vector<float> got;
    if (emulate) {
      GemmData rounded = data;
      const int bits = precision == MatmulPrecision::tf32 ? 10 : 7;
      for (float& x : rounded.a) x = round_mantissa(x, bits);
      for (float& x : rounded.b) x = round_mantissa(x, bits);
      got = run_gemm(rounded, Device::cpu);
    } else {
      OptionsGuard guard(dev, {precision, true});
      got = run_gemm(data, dev);
    }
    check_close(gemm_label(g) + " " + matmul_precision_name(precision), ref, got, Tol{0.0, 0.0, bound_rel}, &bound);
  }
}

}  // namespace

TEST_CASE("primitives: allocate, host copies both ways, device copy, fill and fill_i32 are exact",
          "[cuda][primitives]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "memory primitives");
  Backend& be = backend_for(dev);
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1000}, kVocab, int64_t{(1 << 20) + 3}}) {
    INFO("n = " << n);
    const std::vector<float> v = values(n, 7 + static_cast<uint64_t>(n));
    const size_t bytes = static_cast<size_t>(n) * sizeof(float);
    void* a = be.allocate(bytes);
    void* b = be.allocate(bytes);
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    be.copy_from_host(a, v.data(), bytes);
    be.copy(b, a, bytes);
    std::vector<float> back(static_cast<size_t>(n), NAN);
    be.copy_to_host(back.data(), b, bytes);
    check_bitwise("copy_from_host, copy, copy_to_host", v, back);
    be.fill(static_cast<float*>(a), -2.5f, n);
    be.copy_to_host(back.data(), a, bytes);
    check_bitwise("fill", std::vector<float>(static_cast<size_t>(n), -2.5f), back);
    be.fill_i32(static_cast<int32_t*>(b), -7, n);
    std::vector<int32_t> ints(static_cast<size_t>(n), 0);
    be.copy_to_host(ints.data(), b, bytes);
    CHECK(std::all_of(ints.begin(), ints.end(), [](int32_t x) { return x == -7; }));
    be.deallocate(a, bytes);
    be.deallocate(b, bytes);
  }
  be.synchronize();
  // Tensor-level round trips cross devices both ways.
  const Tensor host = Tensor::from_vector(values(33, 3), {3, 11});
  check_bitwise("Tensor::to and back", host.to_vector(), host.to(dev).to(Device::cpu).to_vector());
  Tensor on_dev = Tensor::zeros({3, 11}, dev);
  on_dev.copy_(host);
  check_bitwise("copy_ from the CPU", host.to_vector(), on_dev.to_vector());
}

TEST_CASE("primitives: gemm fp32 over transposes, batches, padded strides, alpha and beta",
          "[cuda][primitives][gemm]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "gemm fp32");
  check_gemm(dev, MatmulPrecision::fp32, 1e-4);
}

TEST_CASE("primitives: gemm in tf32 and bf16 stays within their rounding of fp32", "[cuda][primitives][gemm]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "gemm tf32/bf16");
  if (is_stand_in(dev)) {
    WARN("GTPO_CUDA_TESTS_ON_CPU: tf32/bf16 are GPU-only; checking that the CPU refuses them, and the "
         "allowances against a CPU emulation of their input rounding");
    CHECK_THROWS_WITH(OptionsGuard(dev, {MatmulPrecision::tf32, true}), Catch::Contains("needs device: cuda"));
    CHECK_THROWS_WITH(OptionsGuard(dev, {MatmulPrecision::bf16, true}), Catch::Contains("needs device: cuda"));
    CHECK(round_mantissa(1.0f + 1.0f / 1024, 10) == 1.0f + 1.0f / 1024);  // kept by tf32
    CHECK(round_mantissa(1.0f + 1.0f / 4096, 10) == 1.0f);                // dropped (ties to even)
    CHECK(round_mantissa(1.0f + 3.0f / 256, 7) == 1.0f + 4.0f / 256);     // bf16: 1.0117 -> 1.0156
    check_gemm(dev, MatmulPrecision::tf32, 4e-3, /*emulate=*/true);
    check_gemm(dev, MatmulPrecision::bf16, 1e-2, /*emulate=*/true);
    return;
  }
  // tf32 keeps 10 mantissa bits (each product off by <= 2^-10 relatively when inputs are rounded, 2^-9 when
  // tensor cores truncate them), bf16 keeps 7 (<= 2^-7 after two roundings): the allowances, relative to
  // sum |a| |b|, are 2-5x the worst error of a CPU emulation of that rounding on these cases.
  check_gemm(dev, MatmulPrecision::tf32, 4e-3);
  check_gemm(dev, MatmulPrecision::bf16, 1e-2);
  CHECK(backend_for(dev).options().matmul_precision == MatmulPrecision::fp32);  // the guard restored it
}

TEST_CASE("primitives: unary and unary_backward, every op", "[cuda][primitives][elementwise]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "unary ops");
  const UnaryOp ops[] = {UnaryOp::neg,     UnaryOp::exp,        UnaryOp::log,   UnaryOp::relu,
                         UnaryOp::gelu_tanh, UnaryOp::silu,     UnaryOp::sigmoid, UnaryOp::tanh,
                         UnaryOp::sqrt,    UnaryOp::square,     UnaryOp::reciprocal, UnaryOp::scale,
                         UnaryOp::add_scalar, UnaryOp::pow_scalar};
  uint64_t seed = 1000;
  for (UnaryOp op : ops) {
    const bool positive = op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::reciprocal ||
                          op == UnaryOp::pow_scalar;
    const float scalar = op == UnaryOp::scale ? 0.7f : op == UnaryOp::add_scalar ? -0.3f : 1.7f;
    for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1000}, kVocab}) {
      const std::string label = std::string(unary_name(op)) + " n=" + std::to_string(n);
      const std::vector<float> x = positive ? values(n, ++seed, 0.05f, 3.0f) : values(n, ++seed, -4.0f, 4.0f);
      const std::vector<float> gy = values(n, ++seed);
      auto forward = [&](Device d) {
        Tensor tx = up(x, d), ty = out_buffer(n, d);
        backend_for(d).unary(op, tx.data(), ty.data(), n, scalar);
        return ty.to_vector();
      };
      const std::vector<float> y = forward(Device::cpu);
      check_close(label + " forward", y, forward(dev), Tol{1e-5, 1e-6});
      auto backward = [&](Device d) {
        Tensor tx = up(x, d), ty = up(y, d), tg = up(gy, d), gx = out_buffer(n, d);
        backend_for(d).unary_backward(op, tx.data(), ty.data(), tg.data(), gx.data(), n, scalar);
        return gx.to_vector();
      };
      check_close(label + " backward", backward(Device::cpu), backward(dev), Tol{2e-5, 2e-6});
    }
  }
}

TEST_CASE("primitives: binary ops with every broadcast pairing", "[cuda][primitives][elementwise]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "binary ops");
  const BroadcastMode modes[] = {BroadcastMode::full, BroadcastMode::repeat_rows, BroadcastMode::repeat_cols};
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {31, 33}, {1000, 7}, {3, kVocab}};
  uint64_t seed = 2000;
  for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div})
    for (const auto& [rows_in, cols_in] : shapes)
      for (BroadcastMode ma : modes)
        for (BroadcastMode mb : modes) {
          // Plain variables, not structured bindings: clang 14 cannot capture those in lambdas.
          const int64_t rows = rows_in, cols = cols_in;
          BinaryPlan plan{rows, cols, ma, mb};
          auto count = [&](BroadcastMode m) {
            return m == BroadcastMode::full ? rows * cols : m == BroadcastMode::repeat_rows ? cols : rows;
          };
          const std::vector<float> a = values(count(ma), ++seed);
          std::vector<float> b = values(count(mb), ++seed, 0.5f, 2.0f);
          for (size_t i = 0; i < b.size(); i += 2) b[i] = -b[i];
          auto run = [&](Device d) {
            Tensor ta = up(a, d), tb = up(b, d), out = out_buffer(rows * cols, d);
            backend_for(d).binary(op, ta.data(), tb.data(), out.data(), plan);
            return out.to_vector();
          };
          std::ostringstream label;
          label << "binary op " << static_cast<int>(op) << " [" << rows << ", " << cols << "] modes "
                << static_cast<int>(ma) << "/" << static_cast<int>(mb);
          check_close(label.str(), run(Device::cpu), run(dev), Tol{1e-6, 0.0});
        }
}

TEST_CASE("primitives: reduce_sum and expand_axis over every axis position", "[cuda][primitives][reduce]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "reduce_sum / expand_axis");
  struct Case {
    int64_t outer, len, inner;
  };
  const Case cases[] = {{1, 1, 1},  {1, 1000, 1}, {31, 33, 1}, {1, 33, 31}, {3, 1031, 5},
                        {1, kVocab, 1}, {2, 3, kVocab}, {1000, 1, 3}, {7, 64, 1}};
  uint64_t seed = 3000;
  for (const Case& c : cases) {
    std::ostringstream label;
    label << "[" << c.outer << ", " << c.len << ", " << c.inner << "]";
    const std::vector<float> x = values(c.outer * c.len * c.inner, ++seed);
    auto reduce = [&](Device d, const std::vector<float>& in, float scale) {
      Tensor tx = up(in, d), out = out_buffer(c.outer * c.inner, d);
      backend_for(d).reduce_sum(tx.data(), out.data(), c.outer, c.len, c.inner, scale);
      return out.to_vector();
    };
    for (float scale : {1.0f, 0.25f}) {
      const std::vector<float> bound = reduce(Device::cpu, abs_of(x), std::abs(scale));
      check_close("reduce_sum " + label.str(), reduce(Device::cpu, x, scale), reduce(dev, x, scale),
                  Tol{0.0, 0.0, 1e-4}, &bound);
    }
    const std::vector<float> small = values(c.outer * c.inner, ++seed);
    auto expand = [&](Device d) {
      Tensor tx = up(small, d), out = out_buffer(c.outer * c.len * c.inner, d);
      backend_for(d).expand_axis(tx.data(), out.data(), c.outer, c.len, c.inner, 0.5f);
      return out.to_vector();
    };
    check_bitwise("expand_axis " + label.str(), expand(Device::cpu), expand(dev));
  }
}

TEST_CASE("primitives: copy_2d with every element size and strides, permute up to rank 5",
          "[cuda][primitives][layout]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "copy_2d / permute");
  for (size_t elem : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
    for (const auto& [rows_in, cols_in] : {std::pair<int64_t, int64_t>{1, 1}, {31, 33}, {1000, 3}, {2, 5000}}) {
      // Plain variables, not structured bindings: clang 14 cannot capture those in lambdas.
      const int64_t rows = rows_in, cols = cols_in;
      const int64_t src_stride = cols + 3, dst_stride = cols + 5;
      const size_t src_bytes = static_cast<size_t>(rows * src_stride) * elem;
      const size_t dst_bytes = static_cast<size_t>(rows * dst_stride) * elem;
      std::vector<uint8_t> src(src_bytes), dst_init(dst_bytes);
      TestRng rng(static_cast<uint64_t>(rows * 131 + cols) + elem);
      for (uint8_t& x : src) x = static_cast<uint8_t>(rng.next());
      for (uint8_t& x : dst_init) x = static_cast<uint8_t>(rng.next());
      auto run = [&](Device d) {
        Backend& be = backend_for(d);
        void* s = be.allocate(src_bytes);
        void* t = be.allocate(dst_bytes);
        be.copy_from_host(s, src.data(), src_bytes);
        be.copy_from_host(t, dst_init.data(), dst_bytes);
        be.copy_2d(t, dst_stride, s, src_stride, rows, cols, elem);
        std::vector<uint8_t> out(dst_bytes);
        be.copy_to_host(out.data(), t, dst_bytes);
        be.deallocate(s, src_bytes);
        be.deallocate(t, dst_bytes);
        return out;
      };
      INFO("copy_2d elem " << elem << " rows " << rows << " cols " << cols);
      CHECK(run(Device::cpu) == run(dev));  // the gaps between rows stay as they were
    }
  }
  struct PermCase {
    std::vector<int64_t> shape, perm;
  };
  const PermCase perms[] = {{{33}, {0}},
                            {{31, 33}, {1, 0}},
                            {{2, 31, 4, 8}, {0, 2, 1, 3}},  // [B, T, H, D] -> [B, H, T, D]
                            {{3, 1, 5, 33}, {3, 0, 2, 1}},
                            {{2, 3, 4, 5, 6}, {4, 2, 0, 3, 1}},
                            {{1000, 7}, {1, 0}}};
  uint64_t seed = 4000;
  for (const PermCase& p : perms) {
    int64_t n = 1;
    for (int64_t s : p.shape) n *= s;
    const std::vector<float> x = values(n, ++seed);
    auto run = [&](Device d) {
      Tensor tx = up(x, d), out = out_buffer(n, d);
      backend_for(d).permute(tx.data(), out.data(), p.shape, p.perm);
      return out.to_vector();
    };
    check_bitwise("permute rank " + std::to_string(p.shape.size()), run(Device::cpu), run(dev));
  }
}

TEST_CASE("primitives: sum_squares in double", "[cuda][primitives][reduce]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "sum_squares");
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1000}, kVocab, int64_t{(1 << 22) + 17}}) {
    const std::vector<float> x = values(n, 5000 + static_cast<uint64_t>(n), -3.0f, 3.0f);
    const double ref = backend_for(Device::cpu).sum_squares(up(x, Device::cpu).data(), n);
    const Tensor t = up(x, dev);
    const double got = backend_for(dev).sum_squares(t.data(), n);
    INFO("n = " << n << ": cpu " << ref << ", device " << got);
    CHECK(std::abs(got - ref) <= 1e-6 * ref);
  }
}

TEST_CASE("primitives: softmax and log-softmax forward and backward", "[cuda][primitives][rows]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "softmax");
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {31, 33}, {33, 31}, {7, 1000}, {3, kVocab}};
  uint64_t seed = 6000;
  for (const auto& [rows_in, cols_in] : shapes)
    for (bool log_softmax : {false, true}) {
      // Plain variables, not structured bindings: clang 14 cannot capture those in lambdas.
      const int64_t rows = rows_in, cols = cols_in;
      std::vector<float> x = values(rows * cols, ++seed, -6.0f, 6.0f);
      x[0] += 80.0f;  // a large logit: the row maximum must be subtracted
      const std::vector<float> gy = values(rows * cols, ++seed);
      const std::string label = std::string(log_softmax ? "log_softmax " : "softmax ") + dims(rows, cols);
      auto forward = [&](Device d) {
        Tensor tx = up(x, d), y = out_buffer(rows * cols, d);
        backend_for(d).softmax_forward(tx.data(), y.data(), rows, cols, log_softmax);
        return y.to_vector();
      };
      const std::vector<float> y = forward(Device::cpu);
      check_close(label + " forward", y, forward(dev), Tol{1e-5, 1e-6});
      auto backward = [&](Device d) {
        Tensor ty = up(y, d), tg = up(gy, d), gx = out_buffer(rows * cols, d);
        backend_for(d).softmax_backward(ty.data(), tg.data(), gx.data(), rows, cols, log_softmax);
        return gx.to_vector();
      };
      check_close(label + " backward", backward(Device::cpu), backward(dev), Tol{1e-4, 1e-5});
    }
}

TEST_CASE("primitives: layer_norm and rms_norm forward and backward", "[cuda][primitives][rows]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "norms");
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {31, 33}, {33, 31}, {5, 1000}, {64, 768}, {2, kVocab}};
  uint64_t seed = 7000;
  const float eps = 1e-5f;
  for (const auto& [rows_in, cols_in] : shapes) {
    // Plain variables, not structured bindings: clang 14 cannot capture those in lambdas.
    const int64_t rows = rows_in, cols = cols_in;
    const std::string label = dims(rows, cols);
    std::vector<float> x = values(rows * cols, ++seed, -2.0f, 3.0f);
    const std::vector<float> w = values(cols, ++seed, 0.5f, 1.5f), bias = values(cols, ++seed);
    const std::vector<float> gy = values(rows * cols, ++seed);
    for (bool with_bias : {true, false}) {
      const std::string ln = "layer_norm " + label + (with_bias ? " bias" : " no bias");
      auto forward = [&](Device d) {
        Tensor tx = up(x, d), tw = up(w, d), tb = up(bias, d), y = out_buffer(rows * cols, d),
               mean = out_buffer(rows, d), rstd = out_buffer(rows, d);
        backend_for(d).layer_norm_forward(tx.data(), tw.data(), with_bias ? tb.data() : nullptr, y.data(),
                                          mean.data(), rstd.data(), rows, cols, eps);
        return std::vector<std::vector<float>>{y.to_vector(), mean.to_vector(), rstd.to_vector()};
      };
      const auto ref = forward(Device::cpu), got = forward(dev);
      check_close(ln + " y", ref[0], got[0], Tol{1e-5, 1e-6});
      check_close(ln + " mean", ref[1], got[1], Tol{1e-5, 1e-6});
      check_close(ln + " rstd", ref[2], got[2], Tol{1e-5, 0.0});
      auto backward = [&](Device d) {
        Tensor tx = up(x, d), tw = up(w, d), mean = up(ref[1], d), rstd = up(ref[2], d), tg = up(gy, d),
               gx = out_buffer(rows * cols, d), gw = out_buffer(cols, d), gb = out_buffer(cols, d);
        backend_for(d).layer_norm_backward(tx.data(), tw.data(), mean.data(), rstd.data(), tg.data(), gx.data(),
                                           gw.data(), with_bias ? gb.data() : nullptr, rows, cols);
        std::vector<std::vector<float>> out{gx.to_vector(), gw.to_vector()};
        if (with_bias) out.push_back(gb.to_vector());
        return out;
      };
      const auto gref = backward(Device::cpu), ggot = backward(dev);
      check_close(ln + " gx", gref[0], ggot[0], Tol{1e-4, 1e-5});
      check_close(ln + " gweight", gref[1], ggot[1], Tol{1e-4, 1e-5});
      if (with_bias) check_close(ln + " gbias", gref[2], ggot[2], Tol{1e-4, 1e-5});
    }
    const std::string rn = "rms_norm " + label;
    auto forward = [&](Device d) {
      Tensor tx = up(x, d), tw = up(w, d), y = out_buffer(rows * cols, d), rstd = out_buffer(rows, d);
      backend_for(d).rms_norm_forward(tx.data(), tw.data(), y.data(), rstd.data(), rows, cols, eps);
      return std::vector<std::vector<float>>{y.to_vector(), rstd.to_vector()};
    };
    const auto ref = forward(Device::cpu), got = forward(dev);
    check_close(rn + " y", ref[0], got[0], Tol{1e-5, 1e-6});
    check_close(rn + " rstd", ref[1], got[1], Tol{1e-5, 0.0});
    auto backward = [&](Device d) {
      Tensor tx = up(x, d), tw = up(w, d), rstd = up(ref[1], d), tg = up(gy, d), gx = out_buffer(rows * cols, d),
             gw = out_buffer(cols, d);
      backend_for(d).rms_norm_backward(tx.data(), tw.data(), rstd.data(), tg.data(), gx.data(), gw.data(), rows,
                                       cols);
      return std::vector<std::vector<float>>{gx.to_vector(), gw.to_vector()};
    };
    const auto gref = backward(Device::cpu), ggot = backward(dev);
    check_close(rn + " gx", gref[0], ggot[0], Tol{1e-4, 1e-5});
    check_close(rn + " gweight", gref[1], ggot[1], Tol{1e-4, 1e-5});
  }
}

TEST_CASE("primitives: embedding gather and ordered scatter-add, RoPE forward and inverse",
          "[cuda][primitives][rows]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "embedding / rope");
  struct EmbCase {
    int64_t n, dim, vocab;
  };
  const EmbCase cases[] = {{1, 1, 1}, {31, 33, 7}, {1000, 64, 5}, {33, 8, kVocab}, {2048, 768, 97}};
  uint64_t seed = 8000;
  for (const EmbCase& c : cases) {
    const std::string label = "embedding n=" + std::to_string(c.n) + " dim=" + std::to_string(c.dim) +
                              " vocab=" + std::to_string(c.vocab);
    const std::vector<float> table = values(c.vocab * c.dim, ++seed);
    const std::vector<int32_t> id = ids(c.n, ++seed, static_cast<int32_t>(c.vocab));  // many repeats when vocab is small
    auto forward = [&](Device d) {
      Tensor tt = up(table, d), ti = up_ints(id, d), out = out_buffer(c.n * c.dim, d);
      backend_for(d).embedding_forward(tt.data(), ti.data_i32(), out.data(), c.n, c.dim);
      return out.to_vector();
    };
    check_bitwise(label + " forward", forward(Device::cpu), forward(dev));
    const std::vector<float> gy = values(c.n * c.dim, ++seed);
    auto backward = [&](Device d, const std::vector<float>& g) {
      Tensor ti = up_ints(id, d), tg = up(g, d), gt = out_buffer(c.vocab * c.dim, d);
      backend_for(d).embedding_backward(ti.data_i32(), tg.data(), gt.data(), c.n, c.dim, c.vocab);
      return gt.to_vector();
    };
    const std::vector<float> bound = backward(Device::cpu, abs_of(gy));
    check_close(label + " backward", backward(Device::cpu, gy), backward(dev, gy), Tol{0.0, 0.0, 1e-4}, &bound);
  }
  struct RopeCase {
    int64_t rows, heads, head_dim;
    float theta;
  };
  const RopeCase ropes[] = {{1, 1, 2, 10000.0f}, {31, 4, 32, 10000.0f}, {33, 2, 64, 1e6f}, {1000, 3, 128, 10000.0f}};
  for (const RopeCase& r : ropes) {
    const std::vector<float> x = values(r.rows * r.heads * r.head_dim, ++seed);
    const std::vector<int32_t> pos = ids(r.rows, ++seed, 4096);  // positions up to 4095
    for (bool inverse : {false, true}) {
      auto run = [&](Device d) {
        Tensor tx = up(x, d), tp = up_ints(pos, d), out = out_buffer(r.rows * r.heads * r.head_dim, d);
        backend_for(d).rope(tx.data(), tp.data_i32(), out.data(), r.rows, r.heads, r.head_dim, r.theta, inverse);
        return out.to_vector();
      };
      // Angles in double on both sides (the CPU's contract); fp32 angles would lose ~1e-4 rad at 4096.
      check_close("rope rows=" + std::to_string(r.rows) + " D=" + std::to_string(r.head_dim) +
                      (inverse ? " inverse" : ""),
                  run(Device::cpu), run(dev), Tol{1e-5, 1e-6});
    }
  }
}

TEST_CASE("primitives: cross-entropy and fused log-prob + entropy over large vocabularies",
          "[cuda][primitives][losses]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "losses");
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {31, 33}, {33, 1000}, {33, kVocab}, {257, 31}};
  const int32_t ignore = -100;
  uint64_t seed = 10000;
  for (const auto& [rows_in, vocab_in] : shapes) {
    // Plain variables, not structured bindings: clang 14 cannot capture those in lambdas.
    const int64_t rows = rows_in, vocab = vocab_in;
    const std::string label = dims(rows, vocab);
    std::vector<float> x = values(rows * vocab, ++seed, -8.0f, 8.0f);
    x[static_cast<size_t>(vocab / 2)] = 60.0f;  // a dominant logit in row 0
    std::vector<int32_t> t = ids(rows, ++seed, static_cast<int32_t>(vocab));
    std::vector<int32_t> t_ignored = t;
    for (size_t r = 1; r < t_ignored.size(); r += 3) t_ignored[r] = ignore;
    const std::vector<float> grow = values(rows, ++seed);

    auto ce_forward = [&](Device d) {
      Tensor tx = up(x, d), tt = up_ints(t_ignored, d), loss = out_buffer(rows, d), lse = out_buffer(rows, d);
      backend_for(d).cross_entropy_forward(tx.data(), tt.data_i32(), loss.data(), lse.data(), rows, vocab, ignore);
      return std::vector<std::vector<float>>{loss.to_vector(), lse.to_vector()};
    };
    const auto ce_ref = ce_forward(Device::cpu), ce_got = ce_forward(dev);
    check_close("cross_entropy " + label + " loss", ce_ref[0], ce_got[0], Tol{1e-5, 1e-6});
    // lse of ignored rows is unspecified: compare the counted ones.
    std::vector<float> lse_ref, lse_got;
    for (size_t r = 0; r < t_ignored.size(); ++r)
      if (t_ignored[r] != ignore) {
        lse_ref.push_back(ce_ref[1][r]);
        lse_got.push_back(ce_got[1][r]);
      }
    check_close("cross_entropy " + label + " lse", lse_ref, lse_got, Tol{1e-5, 1e-6});
    auto ce_backward = [&](Device d) {
      Tensor tx = up(x, d), tt = up_ints(t_ignored, d), lse = up(ce_ref[1], d), tg = up(grow, d),
             gx = out_buffer(rows * vocab, d);
      backend_for(d).cross_entropy_backward(tx.data(), tt.data_i32(), lse.data(), tg.data(), gx.data(), rows, vocab,
                                            ignore);
      return gx.to_vector();
    };
    check_close("cross_entropy " + label + " backward", ce_backward(Device::cpu), ce_backward(dev),
                Tol{1e-5, 1e-6});

    for (float inv_t : {1.0f, 1.0f / 0.7f}) {
      const std::string lab = "logprob_entropy " + label + " 1/T=" + std::to_string(inv_t);
      auto forward = [&](Device d) {
        Tensor tx = up(x, d), tt = up_ints(t, d), lp = out_buffer(rows, d), h = out_buffer(rows, d),
               lse = out_buffer(rows, d);
        backend_for(d).logprob_entropy_forward(tx.data(), tt.data_i32(), lp.data(), h.data(), lse.data(), rows, vocab,
                                               inv_t);
        return std::vector<std::vector<float>>{lp.to_vector(), h.to_vector(), lse.to_vector()};
      };
      const auto ref = forward(Device::cpu), got = forward(dev);
      check_close(lab + " logprob", ref[0], got[0], Tol{1e-5, 1e-5});
      check_close(lab + " entropy", ref[1], got[1], Tol{1e-5, 1e-5});
      check_close(lab + " lse", ref[2], got[2], Tol{1e-5, 1e-6});
      const std::vector<float> glp = values(rows, ++seed), gh = values(rows, ++seed);
      for (int which = 0; which < 3; ++which) {  // both gradients, log-prob only, entropy only
        auto backward = [&](Device d) {
          Tensor tx = up(x, d), tt = up_ints(t, d), lse = up(ref[2], d), h = up(ref[1], d), tglp = up(glp, d),
                 tgh = up(gh, d), gx = out_buffer(rows * vocab, d);
          backend_for(d).logprob_entropy_backward(tx.data(), tt.data_i32(), lse.data(), h.data(),
                                                  which != 2 ? tglp.data() : nullptr,
                                                  which != 1 ? tgh.data() : nullptr, gx.data(), rows, vocab, inv_t);
          return gx.to_vector();
        };
        check_close(lab + " backward " + std::to_string(which), backward(Device::cpu), backward(dev),
                    Tol{1e-4, 1e-5});
      }
    }
  }
}

TEST_CASE("primitives: the token choice gives the CPU's ids exactly", "[cuda][primitives][sampling]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "choose_tokens");
  const TokenChoiceArgs settings[] = {{1.0f, 0, 1.0f, 0}, {0.0f, 0, 1.0f, 0},  {0.7f, 20, 1.0f, 0},
                                      {1.0f, 0, 0.9f, 0}, {1.2f, 50, 0.7f, 0}, {1.0f, 1, 1.0f, 0}};
  uint64_t seed = 20000;
  for (const auto& [rows_in, vocab_in] : {std::pair<int64_t, int64_t>{7, 5}, {64, 1000}, {256, kVocab}}) {
    const int64_t rows = rows_in, vocab = vocab_in;  // plain variables: clang 14 cannot capture bindings
    const std::vector<float> x = values(rows * vocab, ++seed, -6.0f, 6.0f);
    const std::vector<float> u_float = values(rows, ++seed, 0.0f, 0.999f);
    const std::vector<double> u(u_float.begin(), u_float.end());
    for (TokenChoiceArgs a : settings) {
      a.choice_ids = vocab > 100 ? vocab - 7 : vocab;
      auto choose = [&](Device d) {
        return ops::choose_tokens(up(x, d).view({rows, vocab}), u, a).to_int_vector();
      };
      INFO(dims(rows, vocab) << " T " << a.temperature << " top_k " << a.top_k << " top_p " << a.top_p);
      CHECK(choose(Device::cpu) == choose(dev));
    }
  }
}

TEST_CASE("primitives: AdamW step", "[cuda][primitives][optim]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "adamw_step");
  uint64_t seed = 11000;
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{1000}, kVocab}) {
    const std::vector<float> p = values(n, ++seed), g = values(n, ++seed), m = values(n, ++seed, -0.1f, 0.1f),
                             v = values(n, ++seed, 0.0f, 0.01f);
    for (float wd : {0.0f, 0.1f}) {
      auto run = [&](Device d) {
        Tensor tp = up(p, d), tg = up(g, d), tm = up(m, d), tv = up(v, d);
        const float bc1 = 1.0f - std::pow(0.9f, 3.0f), bc2 = 1.0f - std::pow(0.999f, 3.0f);
        backend_for(d).adamw_step(tp.data(), tg.data(), tm.data(), tv.data(), n,
                                  {1e-3f, 0.9f, 0.999f, 1e-8f, wd, bc1, bc2});
        return std::vector<std::vector<float>>{tp.to_vector(), tm.to_vector(), tv.to_vector()};
      };
      const auto ref = run(Device::cpu), got = run(dev);
      const std::string label = "adamw n=" + std::to_string(n) + " wd=" + std::to_string(wd);
      check_close(label + " param", ref[0], got[0], Tol{1e-6, 1e-7});
      check_close(label + " m", ref[1], got[1], Tol{1e-6, 0.0});
      check_close(label + " v", ref[2], got[2], Tol{1e-6, 0.0});
    }
  }
}

// The comparison helper itself: an element out of tolerance must fail (this test is expected to fail).
TEST_CASE("primitives: check_close rejects an out-of-tolerance element", "[cuda][helpers][!shouldfail]") {
  std::vector<float> ref(100, 1.0f), got = ref;
  got[37] = 1.0f + 2e-5f;
  check_close("1e-5 relative", ref, got, Tol{1e-5, 0.0});
}

TEST_CASE("primitives: check_close accepts what is within tolerance, and NaN against NaN", "[cuda][helpers]") {
  std::vector<float> ref = {1.0f, -2.0f, 0.0f, NAN, INFINITY}, got = {1.0f + 5e-6f, -2.0f, 1e-7f, NAN, INFINITY};
  check_close("within", ref, got, Tol{1e-5, 1e-7});
  std::vector<float> bound = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  check_close("bound", {0.0f, 0.0f, 0.0f, 0.0f, 0.0f}, {1e-4f, -1e-4f, 0.0f, 0.0f, 0.0f}, Tol{0.0, 0.0, 1e-4}, &bound);
}
