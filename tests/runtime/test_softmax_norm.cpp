#include <catch2/catch.hpp>
#include <omp.h>

#include <cmath>
#include <limits>

#include "runtime/ops.h"
#include "tests/support/backends.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

// Double-precision references over the last dim.
std::vector<float> ref_softmax(const std::vector<float>& x, int64_t cols, bool log) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(cols); ++r) {
    const float* xr = x.data() + r * cols;
    double mx = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, static_cast<double>(xr[c]));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(xr[c] - mx);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>(log ? xr[c] - mx - std::log(sum) : std::exp(xr[c] - mx) / sum);
  }
  return y;
}

std::vector<float> ref_norm(const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>* b,
                            int64_t cols, double eps, bool rms) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(cols); ++r) {
    const float* xr = x.data() + r * cols;
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t c = 0; c < cols; ++c) mean += xr[c];
      mean /= static_cast<double>(cols);
    }
    for (int64_t c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = static_cast<float>((xr[c] - mean) * rstd * w[c] + (b ? (*b)[c] : 0.0f));
  }
  return y;
}

// Runs f with the given OpenMP thread count, restoring the previous one.
template <typename F>
auto with_threads(int n, F f) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(n);
  auto out = f();
  omp_set_num_threads(before);
  return out;
}
}  // namespace

TEST_CASE("softmax: values against a double reference, rows of 1, odd and wide lengths", "[ops][softmax]") {
  for (int64_t cols : {1, 7, 33, 1000}) {
    Tensor x = random_tensor(Shape{3, 2, cols}, 1 + cols, -8, 8);
    INFO("cols " << cols);
    CHECK(max_abs_diff(ops::softmax(x).to_vector(), ref_softmax(x.to_vector(), cols, false)) < 1e-6);
    CHECK(max_abs_diff(ops::log_softmax(x).to_vector(), ref_softmax(x.to_vector(), cols, true)) < 2e-5);
  }
  // Shift invariance and no overflow for large logits.
  Tensor big = Tensor::from_vector({1000, 1001, 1002, -1000, 0, 1000}, Shape{2, 3});
  std::vector<float> s = ops::softmax(big).to_vector();
  CHECK(s[0] == Approx(0.0900306f).epsilon(1e-5));
  CHECK(s[2] == Approx(0.6652410f).epsilon(1e-5));
  CHECK(s[3] == 0.0f);
  CHECK(ops::log_softmax(big).to_vector()[2] == Approx(-0.4076059f).epsilon(1e-5));
  CHECK(ops::softmax(Tensor::from_vector({3.0f}, Shape{1})).item() == 1.0f);
  CHECK(ops::log_softmax(Tensor::from_vector({3.0f}, Shape{1})).item() == 0.0f);
}

TEST_CASE("softmax: masked (-inf) entries and fully masked rows", "[ops][softmax]") {
  Tensor x = Tensor::from_vector({0, -kInf, 0, -kInf, -kInf, -kInf}, Shape{2, 3});
  CHECK(ops::softmax(x).to_vector() == std::vector<float>{0.5f, 0, 0.5f, 0, 0, 0});
  std::vector<float> l = ops::log_softmax(x).to_vector();
  CHECK(l[0] == Approx(-std::log(2.0f)));
  CHECK(l[1] == -kInf);
  CHECK((l[3] == -kInf && l[4] == -kInf && l[5] == -kInf));
  // Gradients through a masked row stay finite.
  Tensor xg = x.clone().set_requires_grad(true);
  ops::sum_all(ops::mul(ops::softmax(xg), Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3}))).backward();
  for (float g : xg.grad().to_vector()) CHECK(std::isfinite(g));
  CHECK(xg.grad().to_vector()[3] == 0.0f);
  CHECK(std::isnan(ops::softmax(Tensor::from_vector({1, NAN}, Shape{2})).to_vector()[0]));
}

TEST_CASE("softmax: gradients of softmax and log_softmax (default tolerance: h 1e-2, 2e-3 abs + 2e-2 rel)",
          "[ops][softmax][grad]") {
  for (const Shape& shape : {Shape{7}, Shape{3, 5}, Shape{2, 3, 4}, Shape{4, 1}}) {
    INFO("shape " << shape);
    Tensor x = random_tensor(shape, 3, -2, 2, true);
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::softmax(in[0]); }, {x}) == 0);
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::log_softmax(in[0]); }, {x}) == 0);
  }
  CHECK_THROWS_WITH(ops::softmax(Tensor::scalar(1)), Contains("softmax: argument 'x' needs rank >= 1"));
  CHECK_THROWS_WITH(ops::log_softmax(Tensor::from_ints({1}, Shape{1})), Contains("log_softmax: argument 'x' must be f32"));
  CHECK(ops::softmax(Tensor::zeros(Shape{2, 0})).shape() == Shape{2, 0});
  CHECK(ops::softmax(Tensor::zeros(Shape{0, 3})).shape() == Shape{0, 3});
}

TEST_CASE("norm: layer_norm and rms_norm values against a double reference", "[ops][norm]") {
  // Hand-computed: [1, 2, 3] has mean 2, biased variance 2/3.
  Tensor ones = Tensor::full(Shape{3}, 1.0f), zeros = Tensor::zeros(Shape{3});
  std::vector<float> ln = ops::layer_norm(Tensor::from_vector({1, 2, 3}, Shape{1, 3}), ones, zeros, 0.0f).to_vector();
  CHECK(ln[0] == Approx(-1.2247449f).epsilon(1e-6));
  CHECK(ln[1] == 0.0f);
  CHECK(ln[2] == Approx(1.2247449f).epsilon(1e-6));
  // RMS of [3, 4] is sqrt(12.5).
  std::vector<float> rn = ops::rms_norm(Tensor::from_vector({3, 4}, Shape{2}), Tensor::full(Shape{2}, 2.0f), 0.0f).to_vector();
  CHECK(rn[0] == Approx(2 * 3 / std::sqrt(12.5f)).epsilon(1e-6));
  CHECK(rn[1] == Approx(2 * 4 / std::sqrt(12.5f)).epsilon(1e-6));

  for (int64_t cols : {1, 5, 64, 771}) {
    INFO("cols " << cols);
    Tensor x = random_tensor(Shape{3, 4, cols}, 10 + cols, -3, 5);  // off-centre: tests the mean
    Tensor w = random_tensor(Shape{cols}, 11, 0.5f, 1.5f);
    Tensor b = random_tensor(Shape{cols}, 12);
    std::vector<float> xv = x.to_vector(), wv = w.to_vector(), bv = b.to_vector();
    CHECK(max_abs_diff(ops::layer_norm(x, w, b, 1e-5f).to_vector(), ref_norm(xv, wv, &bv, cols, 1e-5, false)) < 2e-5);
    CHECK(max_abs_diff(ops::layer_norm(x, w, Tensor(), 1e-5f).to_vector(), ref_norm(xv, wv, nullptr, cols, 1e-5, false)) < 2e-5);
    CHECK(max_abs_diff(ops::rms_norm(x, w, 1e-6f).to_vector(), ref_norm(xv, wv, nullptr, cols, 1e-6, true)) < 2e-5);
  }
  // A constant row: variance 0, output is the bias.
  Tensor c = Tensor::full(Shape{2, 4}, 3.0f);
  CHECK(ops::layer_norm(c, Tensor::full(Shape{4}, 1.0f), Tensor::full(Shape{4}, 0.25f)).to_vector() ==
        std::vector<float>(8, 0.25f));
}

TEST_CASE("norm: argument errors name the op and shapes", "[ops][norm][errors]") {
  Tensor x = Tensor::zeros(Shape{2, 4});
  CHECK_THROWS_WITH(ops::layer_norm(x, Tensor::zeros(Shape{3}), Tensor()),
                    Contains("layer_norm: weight must be [4] to match x f32[2, 4] on cpu, got f32[3] on cpu"));
  CHECK_THROWS_WITH(ops::layer_norm(x, Tensor::zeros(Shape{4}), Tensor::zeros(Shape{1, 4})),
                    Contains("layer_norm: bias must be [4]"));
  CHECK_THROWS_WITH(ops::rms_norm(x, Tensor()), Contains("rms_norm: argument 'weight' is an undefined tensor"));
  CHECK_THROWS_WITH(ops::rms_norm(Tensor::scalar(1), Tensor::zeros(Shape{1})), Contains("needs rank >= 1"));
}

TEST_CASE("norm: gradients for x, weight and bias (default tolerance: h 1e-2, 2e-3 abs + 2e-2 rel)", "[ops][norm][grad]") {
  for (const Shape& shape : {Shape{5}, Shape{3, 7}, Shape{2, 3, 6}}) {
    INFO("shape " << shape);
    const int64_t cols = shape[-1];
    Tensor x = random_tensor(shape, 20, -1, 2, true);
    Tensor w = random_tensor(Shape{cols}, 21, 0.5f, 1.5f, true);
    Tensor b = random_tensor(Shape{cols}, 22, -1, 1, true);
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], in[1], in[2]); }, {x, w, b}) == 0);
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], in[1], Tensor()); }, {x, w}) == 0);
    CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::rms_norm(in[0], in[1], 1e-6f); }, {x, w}) == 0);
    // Only some inputs need a gradient.
    Tensor wc = w.detach().clone();
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::layer_norm(in[0], wc, in[1]); }, {x, b}) == 0);
    Tensor xc = x.detach().clone();
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::rms_norm(xc, in[0]); }, {w}) == 0);
  }
  // Weight and bias gradients are column sums over rows.
  Tensor x = Tensor::from_vector({1, 3, 2, 6}, Shape{2, 2});  // both rows normalise to xhat = [-1, 1]
  Tensor w = Tensor::full(Shape{2}, 1.0f).set_requires_grad(true);
  Tensor b = Tensor::zeros(Shape{2}).set_requires_grad(true);
  ops::layer_norm(x, w, b, 0.0f).backward(Tensor::from_vector({1, 2, 3, 4}, Shape{2, 2}));
  CHECK(b.grad().to_vector() == std::vector<float>{4, 6});
  CHECK(w.grad().to_vector() == std::vector<float>{-4, 6});
}

TEST_CASE("softmax+norm: results are bitwise identical for any thread count", "[ops][softmax][norm][determinism]") {
  Tensor x = random_tensor(Shape{512, 96}, 30, -2, 3, true);
  Tensor w = random_tensor(Shape{96}, 31, 0.5f, 1.5f, true);
  Tensor b = random_tensor(Shape{96}, 32, -1, 1, true);
  Tensor seed = random_tensor(Shape{512, 96}, 33);
  auto run = [&]() {
    for (const Tensor* t : {&x, &w, &b}) t->zero_grad();
    Tensor y = ops::add(ops::layer_norm(x, w, b), ops::rms_norm(ops::softmax(x), w));
    y = ops::add(y, ops::log_softmax(y));
    y.backward(seed);
    std::vector<float> all = y.to_vector();
    for (const Tensor* t : {&x, &w, &b}) {
      std::vector<float> g = t->grad().to_vector();
      all.insert(all.end(), g.begin(), g.end());
    }
    return all;
  };
  const std::vector<float> one = with_threads(1, run);
  CHECK(one == with_threads(2, run));
  CHECK(one == with_threads(3, run));
}

TEST_CASE("softmax+norm: every backend agrees with the CPU", "[ops][softmax][norm][backends]") {
  Tensor x = random_tensor(Shape{4, 9, 67}, 40, -3, 3, true);
  Tensor w = random_tensor(Shape{67}, 41, 0.5f, 1.5f, true);
  Tensor b = random_tensor(Shape{67}, 42, -1, 1, true);
  check_backends("softmax+log_softmax+layer_norm+rms_norm", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::softmax(in[0]), ops::log_softmax(in[0]), ops::layer_norm(in[0], in[1], in[2]),
                               ops::layer_norm(in[0], in[1], Tensor()), ops::rms_norm(in[0], in[1], 1e-6f)};
  }, {x, w, b}, 1e-4);
}
