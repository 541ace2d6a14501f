#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

#include "runtime/backend.h"
#include "runtime/cpu/cpu_gemm_eigen.h"
#include "runtime/ops.h"
#include "tests/support/backends.h"
#include "tests/support/determinism.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

namespace {
// Naive reference: C = op(A) op(B) in double.
std::vector<float> naive_matmul(const std::vector<float>& a, const std::vector<float>& b, int64_t m, int64_t n,
                                int64_t k, bool ta, bool tb) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      c[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
    }
  return c;
}
}  // namespace

TEST_CASE("matmul: values against a naive product, all transposes, odd and tile-crossing sizes", "[ops][matmul]") {
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {3, 5, 7}, {131, 517, 17}, {2, 3, 0}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, 1);
        Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, 2);
        std::vector<float> want = naive_matmul(a.to_vector(), b.to_vector(), m, n, k, ta, tb);
        std::vector<float> got = ops::matmul(a, b, ta, tb).to_vector();
        INFO("m=" << m << " n=" << n << " k=" << k << " ta=" << ta << " tb=" << tb);
        CHECK(max_abs_diff(got, want) < 1e-4);
      }
  }
}

namespace {
// The CPU GEMM's contract (runtime/cpu/cpu_gemm_kernel.h): C[i, j] = alpha * (one fma chain over p in index
// order from zero), plus beta * C. Computed here one element at a time with std::fma: exact equality.
struct GemmCase {
  int64_t m, n, k;
  bool ta, tb;
  int64_t batch = 1;
  bool shared_b = false;
  float alpha = 1.0f, beta = 0.0f;
};

std::vector<float> fma_chain_reference(const GemmCase& g, const std::vector<float>& a,
                                       const std::vector<float>& b, const std::vector<float>& c0) {
  std::vector<float> c = c0;
  for (int64_t e = 0; e < g.batch; ++e) {
    const float* ae = a.data() + e * g.m * g.k;
    const float* be = b.data() + (g.shared_b ? 0 : e * g.k * g.n);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float sum = 0.0f;
        for (int64_t p = 0; p < g.k; ++p)
          sum = std::fma(g.ta ? ae[p * g.m + i] : ae[i * g.k + p], g.tb ? be[j * g.k + p] : be[p * g.n + j],
                         sum);
        float& out = c[static_cast<size_t>((e * g.m + i) * g.n + j)];
        const float scaled = g.alpha == 1.0f ? sum : g.alpha * sum;
        out = g.beta == 0.0f ? scaled : g.beta * out + scaled;
      }
  }
  return c;
}

GemmArgs gemm_args(const GemmCase& g) {
  GemmArgs x;
  x.trans_a = g.ta;
  x.trans_b = g.tb;
  x.m = g.m;
  x.n = g.n;
  x.k = g.k;
  x.alpha = g.alpha;
  x.beta = g.beta;
  x.lda = g.ta ? g.m : g.k;
  x.stride_a = g.m * g.k;
  x.ldb = g.tb ? g.k : g.n;
  x.stride_b = g.shared_b ? 0 : g.k * g.n;
  x.ldc = g.n;
  x.stride_c = g.m * g.n;
  x.batch = g.batch;
  return x;
}

std::vector<float> cpu_gemm(const GemmCase& g, const std::vector<float>& a, const std::vector<float>& b,
                            std::vector<float> c) {
  GemmArgs x = gemm_args(g);
  x.a = a.data();
  x.b = b.data();
  x.c = c.data();
  backend_for(Device::cpu).gemm(x);
  return c;
}
}  // namespace

TEST_CASE("matmul: a CPU GEMM element is the in-order fma chain, whatever the shape, cut or thread count",
          "[ops][matmul][determinism]") {
  std::vector<GemmCase> cases;
  // Row tails of every register tile (1..13, 97), column tails around one and two vectors
  // (1, 15..17, 31..33), depths across the 512-deep blocks (1100), batches with their own and with a shared
  // B, alpha and beta.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      for (int64_t m : {1, 2, 5, 11, 12, 13, 97})
        for (int64_t n : {1, 15, 16, 17, 33, 50}) cases.push_back({m, n, 7, ta, tb});
      cases.push_back({40, 70, 1100, ta, tb});
      cases.push_back({300, 40, 64, ta, tb});
      cases.push_back({5, 1030, 300, ta, tb});  // B rows a page apart: the depth-block copy
      cases.push_back({9, 20, 30, ta, tb, 3, false});
      cases.push_back({9, 20, 30, ta, tb, 3, true});
      cases.push_back({17, 31, 600, ta, tb, 2, false, 0.5f, 0.75f});
    }
  // A transposed B too wide to pack at once (2 column blocks of at most 2^20 floats).
  cases.push_back({3, 2200, 500, false, true});
  const int saved_threads = omp_get_max_threads();
  uint64_t seed = 1;
  for (const GemmCase& g : cases) {
    INFO("m=" << g.m << " n=" << g.n << " k=" << g.k << " ta=" << g.ta << " tb=" << g.tb << " batch="
              << g.batch << " shared_b=" << g.shared_b << " alpha=" << g.alpha << " beta=" << g.beta);
    const std::vector<float> a = random_tensor(Shape{g.batch * g.m * g.k}, seed++).to_vector();
    const std::vector<float> b =
        random_tensor(Shape{(g.shared_b ? 1 : g.batch) * g.k * g.n}, seed++).to_vector();
    // beta = 0 must overwrite C whatever it held, NaN included.
    const std::vector<float> c0 = g.beta == 0.0f
                                      ? std::vector<float>(static_cast<size_t>(g.batch * g.m * g.n), NAN)
                                      : random_tensor(Shape{g.batch * g.m * g.n}, seed++).to_vector();
    const std::vector<float> want = fma_chain_reference(g, a, b, c0);
    REQUIRE_FALSE(gemm_goes_to_eigen(gemm_args(g)));
    for (int threads : {1, 2}) {
      omp_set_num_threads(threads);
      CHECK(bitwise_equal(cpu_gemm(g, a, b, c0), want));
    }
  }
  omp_set_num_threads(saved_threads);
}

TEST_CASE(
    "matmul: large weight gradients (Eigen's tiles) are thread-count independent and near the fma chain",
    "[ops][matmul][determinism]") {
  // A^T B with a C past the register kernel's limit, as a hidden-256 model's weight gradients are.
  // ... and any product whose depth and width both reach 512 (GPT-2-sized projections).
  for (const GemmCase& g : {GemmCase{256, 100, 700, true, false}, GemmCase{130, 130, 50, true, false, 2},
                            GemmCase{20, 600, 700, false, true}, GemmCase{33, 512, 513, false, false}}) {
    INFO("m=" << g.m << " n=" << g.n << " k=" << g.k << " batch=" << g.batch);
    REQUIRE(gemm_goes_to_eigen(gemm_args(g)));
    const std::vector<float> a = random_tensor(Shape{g.batch * g.m * g.k}, 11).to_vector();
    const std::vector<float> b = random_tensor(Shape{g.batch * g.k * g.n}, 12).to_vector();
    const std::vector<float> c0(static_cast<size_t>(g.batch * g.m * g.n), 0.0f);
    const auto [one, two] = with_1_and_2_threads([&] { return cpu_gemm(g, a, b, c0); });
    CHECK(bitwise_equal(one, two));
    CHECK(max_abs_diff(one, fma_chain_reference(g, a, b, c0)) < 1e-4 * static_cast<double>(g.k));
  }
}

TEST_CASE("matmul: a row's product has the same bits alone and inside a large batch",
          "[ops][matmul][determinism]") {
  // What lets a decode step (one row per sequence) and the training forward (thousands of rows) agree.
  Tensor w = random_tensor(Shape{192, 64}, 3);
  Tensor x = random_tensor(Shape{300, 64}, 4);
  const std::vector<float> all = ops::linear(x, w).to_vector();
  for (int64_t row : {0, 11, 12, 150, 299}) {
    Tensor one = ops::slice(x, 0, row, row + 1);
    const std::vector<float> alone = ops::linear(one, w).to_vector();
    CHECK(bitwise_equal(alone, std::vector<float>(all.begin() + row * 192, all.begin() + (row + 1) * 192)));
  }
}

TEST_CASE("linear: a prepared weight gives linear's bits", "[ops][matmul][determinism]") {
  // Weights the register kernel would pack per call (panels made once; whole and partial panels) and one it
  // hands to Eigen's tiles (width 0: the weight itself); a decode step's few rows and a training batch's many.
  NoGradGuard no_grad;
  for (auto [out, in] : {std::pair<int64_t, int64_t>{192, 64}, {100, 48}, {5, 7}, {704, 256}, {600, 512}}) {
    Tensor w = random_tensor(Shape{out, in}, 21);
    Tensor bias = random_tensor(Shape{out}, 22);
    const ops::PreparedWeight prepared = ops::prepare_weight(w);
    const bool eigen = std::min(out, in) >= 512;
    INFO("weight [" << out << ", " << in << "], width " << prepared.width);
    CHECK((prepared.width == 0) == eigen);
    for (int64_t rows : {int64_t{1}, int64_t{7}, int64_t{128}, int64_t{300}}) {
      Tensor x = random_tensor(Shape{rows, 1, in}, 23);
      CHECK(bitwise_equal(ops::linear(x, prepared).to_vector(), ops::linear(x, w).to_vector()));
      CHECK(bitwise_equal(ops::linear(x, prepared, bias).to_vector(), ops::linear(x, w, bias).to_vector()));
      CHECK(ops::linear(x, prepared).shape() == Shape{rows, 1, out});
    }
  }
}

TEST_CASE("linear: a prepared weight refuses inputs that would need a gradient, and bad shapes",
          "[ops][matmul][errors]") {
  Tensor w = random_tensor(Shape{64, 32}, 24);
  const ops::PreparedWeight prepared = ops::prepare_weight(w);
  REQUIRE(prepared.width > 0);  // the CPU's register kernel packs this size
  Tensor x = random_tensor(Shape{3, 32}, 25, -1, 1, true);
  CHECK_THROWS_WITH(ops::linear(x, prepared), Contains("records no gradient; call it under NoGradGuard"));
  NoGradGuard no_grad;
  CHECK_THROWS_WITH(ops::linear(Tensor::zeros(Shape{3, 31}), prepared),
                    Contains("linear: input f32[3, 31] on cpu does not end in the prepared weight's in-features 32"));
  CHECK_THROWS_WITH(ops::prepare_weight(Tensor::zeros(Shape{2, 3, 4})), Contains("weight must be [out, in]"));
}

TEST_CASE("matmul: gradients for 2-D, batched and shared-weight products", "[ops][matmul][grad]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("ta=" << ta << " tb=" << tb);
      Tensor a = random_tensor(ta ? Shape{2, 5, 3} : Shape{2, 3, 5}, 1, -1, 1, true);
      Tensor b = random_tensor(tb ? Shape{2, 4, 5} : Shape{2, 5, 4}, 2, -1, 1, true);
      auto batched = [&](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1], ta, tb); };
      CHECK(gradcheck(batched, {a, b}) == 0);
      Tensor w = random_tensor(tb ? Shape{4, 5} : Shape{5, 4}, 3, -1, 1, true);
      Tensor x = random_tensor(ta ? Shape{5, 3} : Shape{2, 3, 5}, 4, -1, 1, true);
      auto shared = [&](const std::vector<Tensor>& in) { return ops::matmul(in[0], in[1], ta, tb); };
      CHECK(gradcheck(shared, {x, w}) == 0);
    }
  Tensor x = random_tensor(Shape{3, 6}, 5, -1, 1, true);
  Tensor w = random_tensor(Shape{4, 6}, 6, -1, 1, true);
  Tensor bias = random_tensor(Shape{4}, 7, -1, 1, true);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::linear(in[0], in[1], in[2]); }, {x, w, bias}) == 0);
}

TEST_CASE("matmul: shape errors name both shapes", "[ops][matmul][errors]") {
  CHECK_THROWS_WITH(ops::matmul(Tensor::zeros(Shape{2, 3}), Tensor::zeros(Shape{4, 5})),
                    Contains("matmul: inner dimensions differ: a [2, 3] and b [4, 5] give 3 vs 4"));
  CHECK_THROWS_WITH(ops::matmul(Tensor::zeros(Shape{2, 2, 3}), Tensor::zeros(Shape{3, 3, 4})),
                    Contains("batch dimensions differ"));
  CHECK_THROWS_WITH(ops::matmul(Tensor::zeros(Shape{3}), Tensor::zeros(Shape{3, 4})), Contains("needs rank >= 2"));
}

TEST_CASE("reduce: sum and mean values and gradients over every axis", "[ops][reduce]") {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  CHECK(ops::sum(x, 0).to_vector() == std::vector<float>{5, 7, 9});
  CHECK(ops::sum(x, -1).to_vector() == std::vector<float>{6, 15});
  CHECK(ops::mean(x, 1, true).shape() == Shape{2, 1});
  CHECK(ops::mean(x, 1).to_vector() == std::vector<float>{2, 5});
  CHECK(ops::sum_all(x).item() == 21.0f);
  CHECK(ops::mean_all(x).item() == 3.5f);
  CHECK_THROWS_WITH(ops::sum(x, 2), Contains("sum: axis 2 is out of range for shape [2, 3]"));
  Tensor y = random_tensor(Shape{3, 5, 7}, 3, -1, 1, true);
  for (int64_t axis : {0, 1, 2, -1}) {
    INFO("axis " << axis);
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::sum(in[0], axis); }, {y}) == 0);
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::mean(in[0], axis, true); }, {y}) == 0);
  }
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::mean_all(ops::reshape(in[0], Shape{5, -1})); }, {y}) == 0);
}

TEST_CASE("matmul+reduce: every backend agrees with the CPU", "[ops][matmul][backends]") {
  Tensor a = random_tensor(Shape{3, 17, 9}, 1, -1, 1, true);
  Tensor w = random_tensor(Shape{11, 9}, 2, -1, 1, true);
  check_backends("linear+sum", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::sum(ops::matmul(in[0], in[1], false, true), 1)};
  }, {a, w}, 1e-4);
}

TEST_CASE("reduce: sums go in chunks of 64 rows, then the chunk sums in order, at any thread count",
          "[ops][reduce][determinism]") {
  // 1e8 then 1s: in one pass from 0 the 1s after 1e8 vanish (1e8 + 1 == 1e8 in float); in chunks of 64, the
  // 1s of chunks without 1e8 sum exactly first. Column 1 has 1e8 in chunk 1 instead.
  const int64_t len = 200, inner = 2;
  std::vector<float> x(static_cast<size_t>(len * inner), 1.0f);
  x[0] = 1e8f;
  x[70 * inner + 1] = 1e8f;
  auto expected = [&](int64_t i) {  // Backend::reduce_sum's order, written out
    float total = 0.0f;
    for (int64_t c = 0; c * kReduceChunkRows < len; ++c) {
      float chunk = 0.0f;
      for (int64_t l = c * kReduceChunkRows; l < std::min(len, (c + 1) * kReduceChunkRows); ++l)
        chunk += x[static_cast<size_t>(l * inner + i)];
      total += chunk;
    }
    return total;
  };
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    const std::vector<float> sums = ops::sum(Tensor::from_vector(x, {len, inner}), 0).to_vector();
    CHECK(sums[0] == expected(0));
    CHECK(sums[1] == expected(1));
    CHECK(sums[0] == 1e8f + 136.0f);  // the 1s of chunks 1..3 (64 + 64 + 8) survive; chunk 0's 63 do not
  }
  omp_set_num_threads(saved);
}
