#include <catch2/catch.hpp>

#include "runtime/ops.h"
#include "tests/support/backends.h"
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
