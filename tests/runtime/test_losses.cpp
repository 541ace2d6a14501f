#include <catch2/catch.hpp>

#include "tests/support/determinism.h"
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/cpu/cpu_vec_math.h"
#include "runtime/ops.h"
#include "tests/support/backends.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

namespace {

// Naive double-precision reference for one row: z_k = x_k * inv_t, then log-softmax quantities.
struct RefRow {
  double lse = 0, logprob = 0, entropy = 0;
  std::vector<double> p;
};
RefRow ref_row(const float* x, int64_t vocab, int32_t target, double inv_t) {
  RefRow r;
  std::vector<double> z(static_cast<size_t>(vocab));
  double m = -INFINITY;
  for (int64_t k = 0; k < vocab; ++k) m = std::max(m, z[static_cast<size_t>(k)] = x[k] * inv_t);
  // Terms at the max (each exactly 1) apart from the rest, so that a peaked row's tiny log S stays exact.
  double at_max = 0, rest = 0;
  for (double v : z) (v == m ? at_max : rest) += v == m ? 1.0 : std::exp(v - m);
  const double log_sum = std::log(at_max) + std::log1p(rest / at_max);
  r.lse = m + log_sum;
  // log p = (z - m) - log S: going through lse = m + log S would round log S to an ulp of m.
  r.logprob = (z[static_cast<size_t>(target)] - m) - log_sum;
  for (double v : z) {
    const double lp = (v - m) - log_sum, p = std::exp(lp);
    r.p.push_back(p);
    if (p > 0) r.entropy -= p * lp;
  }
  return r;
}

// |got - want| <= atol + rtol |want| for every element; reports the worst.
bool close(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol) {
  REQUIRE(got.size() == want.size());
  bool ok = true;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::abs(got[i] - want[i]);
    if (!(d <= atol + rtol * std::abs(want[i]))) {
      if (ok) UNSCOPED_INFO("element " << i << ": got " << got[i] << " want " << want[i]);
      ok = false;
    }
  }
  return ok;
}

std::vector<float> scaled(std::vector<float> v, float s) {
  for (float& e : v) e *= s;
  return v;
}

}  // namespace

// ---- the vectorisable exp ---------------------------------------------------------------------------

TEST_CASE("exp_bounded: within 2 ulp of exp over [-87, 0], flushes below, propagates NaN", "[ops][losses][ops_embed]") {
  double worst = 0;
  for (float x = -87.0f; x <= 1.0f; x += 0.000731f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(cpu_math::exp_bounded(x) - want) / want);
  }
  CHECK(worst < 2 * 5.97e-8);
  CHECK(cpu_math::exp_bounded(0.0f) == 1.0f);
  CHECK(cpu_math::exp_bounded(-88.0f) == 0.0f);
  CHECK(cpu_math::exp_bounded(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isnan(cpu_math::exp_bounded(std::numeric_limits<float>::quiet_NaN())));
  // Beyond the contract (x <= 88) but defined: +inf, never a float-to-int conversion out of range (the
  // sanitizer suite runs this under UBSan).
  CHECK(cpu_math::exp_bounded(1e30f) == std::numeric_limits<float>::infinity());
  CHECK(cpu_math::exp_bounded(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
}

TEST_CASE("exp_any: within 2 ulp of exp over [-87, 88.72], +inf above, 0 below, NaN kept", "[ops][elementwise]") {
  double worst = 0;
  for (float x = -87.0f; x <= 88.72f; x += 0.00317f) {
    const double want = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(cpu_math::exp_any(x) - want) / want);
  }
  CHECK(worst < 2 * 5.97e-8);
  CHECK(cpu_math::exp_any(0.0f) == 1.0f);
  CHECK(std::isfinite(cpu_math::exp_any(88.72f)));
  CHECK(cpu_math::exp_any(88.73f) == std::numeric_limits<float>::infinity());
  CHECK(cpu_math::exp_any(std::numeric_limits<float>::infinity()) == std::numeric_limits<float>::infinity());
  CHECK(cpu_math::exp_any(-88.0f) == 0.0f);
  CHECK(cpu_math::exp_any(-std::numeric_limits<float>::infinity()) == 0.0f);
  CHECK(std::isnan(cpu_math::exp_any(std::numeric_limits<float>::quiet_NaN())));
}

// ---- cross-entropy --------------------------------------------------------------------------------

TEST_CASE("cross_entropy: values against a double reference, ignored rows, odd shapes", "[ops][cross_entropy][ops_embed]") {
  for (auto [n, v] : {std::pair<int64_t, int64_t>{1, 1}, {1, 2}, {7, 13}, {5, 257}, {3, 50257}}) {
    INFO("N=" << n << " V=" << v);
    Tensor logits = random_tensor(Shape{n, v}, 40 + v, -6, 6);
    std::vector<int32_t> t = random_ids(Shape{n}, 41, static_cast<int32_t>(v)).to_int_vector();
    if (n > 2) t[1] = -100;
    Tensor targets = Tensor::from_ints(t, Shape{n});
    std::vector<float> x = logits.to_vector();
    std::vector<double> want(static_cast<size_t>(n));
    double total = 0;
    int counted = 0;
    for (int64_t r = 0; r < n; ++r) {
      if (t[static_cast<size_t>(r)] == -100) continue;
      want[static_cast<size_t>(r)] = -ref_row(&x[static_cast<size_t>(r * v)], v, t[static_cast<size_t>(r)], 1.0).logprob;
      total += want[static_cast<size_t>(r)];
      ++counted;
    }
    CHECK(close(ops::cross_entropy_rows(logits, targets).to_vector(), want, 1e-6, 1e-6));
    CHECK(ops::cross_entropy(logits, targets).item() == Approx(total / counted).epsilon(1e-6).margin(1e-7));
  }
  // Every row ignored: the mean is 0 and so is the gradient. A custom ignore_index.
  Tensor logits = random_tensor(Shape{3, 4}, 42, -1, 1, true);
  Tensor loss = ops::cross_entropy(logits, Tensor::from_ints({-100, -100, -100}, Shape{3}));
  CHECK(loss.shape() == Shape{});
  CHECK(loss.item() == 0.0f);
  loss.backward();
  CHECK(logits.grad().to_vector() == std::vector<float>(12, 0.0f));
  CHECK(ops::cross_entropy_rows(logits, Tensor::from_ints({3, 3, 0}, Shape{3}), 3).to_vector()[0] == 0.0f);
  // Leading dims beyond one: logits [2, 3, V] with targets [2, 3].
  CHECK(ops::cross_entropy_rows(random_tensor(Shape{2, 3, 5}, 43), random_ids(Shape{2, 3}, 44, 5)).shape() == Shape{2, 3});
}

TEST_CASE("cross_entropy: robust at logits of +-1e4", "[ops][cross_entropy][ops_embed]") {
  const int64_t n = 4, v = 101;
  Tensor logits = Tensor::from_vector(scaled(random_values(n * v, 45), 1e4f), Shape{n, v});
  std::vector<int32_t> t = {0, 50, 100, 7};
  std::vector<float> x = logits.to_vector();
  std::vector<double> want;
  for (int64_t r = 0; r < n; ++r) want.push_back(-ref_row(&x[static_cast<size_t>(r * v)], v, t[static_cast<size_t>(r)], 1.0).logprob);
  // Losses of size ~1e4 are exact to fp32 rounding of the result.
  CHECK(close(ops::cross_entropy_rows(logits, Tensor::from_ints(t, Shape{n})).to_vector(), want, 1e-3, 1e-6));
}

TEST_CASE("cross_entropy: gradients (gradcheck 2e-3 abs + 2e-2 rel, h = 1e-2)", "[ops][cross_entropy][grad][ops_embed]") {
  Tensor logits = random_tensor(Shape{5, 7}, 46, -2, 2, true);
  Tensor targets = Tensor::from_ints({3, -100, 0, 6, 6}, Shape{5});
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::cross_entropy(in[0], targets); }, {logits}) == 0);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::cross_entropy_rows(in[0], targets); }, {logits}) == 0);
}

TEST_CASE("cross_entropy: bad targets and shapes are reported with the row and value", "[ops][cross_entropy][errors][ops_embed]") {
  Tensor logits = Tensor::zeros(Shape{3, 13});
  CHECK_THROWS_WITH(ops::cross_entropy(logits, Tensor::from_ints({0, 1, 13}, Shape{3})),
                    Contains("cross_entropy: target 13 at row 2 is out of range [0, 13) and is not ignore_index (-100)"));
  CHECK_THROWS_WITH(ops::cross_entropy_rows(logits, Tensor::from_ints({-1, 1, 2}, Shape{3})),
                    Contains("cross_entropy_rows: target -1 at row 0 is out of range [0, 13)"));
  CHECK_THROWS_WITH(ops::cross_entropy(logits, Tensor::from_ints({0, 1}, Shape{2})),
                    Contains("cross_entropy: targets must have the logits' leading shape [3] (logits [3, 13]), got i32[2]"));
  CHECK_THROWS_WITH(ops::cross_entropy(logits, Tensor::zeros(Shape{3})), Contains("cross_entropy: argument 'targets' must be i32"));
  CHECK_THROWS_WITH(ops::cross_entropy(Tensor::zeros(Shape{3, 0}), Tensor::from_ints({0, 0, 0}, Shape{3})),
                    Contains("cross_entropy: the vocabulary (last dim of logits [3, 0]) is empty"));
}

TEST_CASE("cross_entropy: bitwise identical with 1 and 2 threads", "[ops][cross_entropy][determinism][ops_embed]") {
  Tensor logits = random_tensor(Shape{64, 5003}, 47, -8, 8);
  std::vector<int32_t> t = random_ids(Shape{64}, 48, 5003).to_int_vector();
  t[5] = -100;
  Tensor targets = Tensor::from_ints(t, Shape{64});
  auto [one, two] = with_1_and_2_threads([&] {
    Tensor x = logits.clone();
    x.set_requires_grad(true);
    Tensor loss = ops::cross_entropy(x, targets);
    loss.backward();
    return std::make_pair(loss.to_vector(), x.grad().to_vector());
  });
  CHECK(bitwise_equal(one.first, two.first));
  CHECK(bitwise_equal(one.second, two.second));
}

TEST_CASE("cross_entropy: every backend agrees with the CPU", "[ops][cross_entropy][backends][ops_embed]") {
  Tensor logits = random_tensor(Shape{9, 1031}, 49, -5, 5, true);
  Tensor targets = Tensor::from_ints({0, 1030, -100, 5, 6, 7, 8, 9, 10}, Shape{9});
  check_backends("cross_entropy", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::cross_entropy_rows(in[0], in[1]), ops::cross_entropy(in[0], in[1])};
  }, {logits, targets}, 1e-5);
}

// ---- token_logprob_entropy --------------------------------------------------------------------------

TEST_CASE("token_logprob_entropy: values against a double reference, temperatures, odd shapes", "[ops][logprob_entropy][ops_embed]") {
  for (auto [n, v] : {std::pair<int64_t, int64_t>{1, 1}, {1, 2}, {5, 7}, {17, 257}, {3, 50257}}) {
    for (float temp : {0.5f, 1.0f, 0.7f, 2.0f}) {
      INFO("N=" << n << " V=" << v << " T=" << temp);
      Tensor logits = random_tensor(Shape{n, v}, 50 + v, -8, 8);
      Tensor targets = random_ids(Shape{n}, 51, static_cast<int32_t>(v));
      std::vector<float> x = logits.to_vector();
      std::vector<int32_t> t = targets.to_int_vector();
      std::vector<double> lp, h;
      for (int64_t r = 0; r < n; ++r) {
        // Pure double z = x / T: the fp32 rounding of z = x * (1/T) stays within the tolerance here.
        RefRow ref = ref_row(&x[static_cast<size_t>(r * v)], v, t[static_cast<size_t>(r)], 1.0 / temp);
        lp.push_back(ref.logprob);
        h.push_back(ref.entropy);
      }
      ops::LogprobEntropy out = ops::token_logprob_entropy(logits, targets, temp);
      CHECK(close(out.logprob.to_vector(), lp, 2e-6, 2e-6));
      CHECK(close(out.entropy.to_vector(), h, 2e-6, 2e-6));
    }
  }
  ops::LogprobEntropy one = ops::token_logprob_entropy(Tensor::from_vector({3.0f}, Shape{1, 1}), Tensor::from_ints({0}, Shape{1}));
  CHECK(one.logprob.item() == 0.0f);
  CHECK(one.entropy.item() == 0.0f);
}

TEST_CASE("token_logprob_entropy: peaked (H ~ 0) and uniform (H = log V) rows at logits up to +-1e4",
          "[ops][logprob_entropy][ops_embed]") {
  const int64_t v = 50257;
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    INFO("T=" << temp);
    std::vector<float> x(static_cast<size_t>(4 * v), -1e4f);
    x[123] = 1e4f;                                          // row 0: one-hot at +1e4, the rest at -1e4
    for (int64_t k = 0; k < v; ++k) x[static_cast<size_t>(v + k)] = 1e4f;  // row 1: uniform at 1e4
    for (int64_t k = 0; k < v; ++k) x[static_cast<size_t>(2 * v + k)] = -3.7f;  // row 2: uniform
    x[static_cast<size_t>(3 * v + 9)] = 30.0f;              // row 3: peaked but H > 0: 30 above the rest (-1e4)
    for (int64_t k = 0; k < v; ++k) if (k != 9) x[static_cast<size_t>(3 * v + k)] = 30.0f - 40.0f * temp;
    Tensor logits = Tensor::from_vector(x, Shape{4, v});
    Tensor targets = Tensor::from_ints({123, 5, 50256, 9}, Shape{4});
    ops::LogprobEntropy out = ops::token_logprob_entropy(logits, targets, temp);
    std::vector<float> lp = out.logprob.to_vector(), h = out.entropy.to_vector();
    const double log_v = std::log(static_cast<double>(v));
    CHECK(lp[0] == 0.0f);
    CHECK(h[0] == 0.0f);
    CHECK(lp[1] == Approx(-log_v).epsilon(1e-7));
    CHECK(h[1] == Approx(log_v).epsilon(1e-7));
    CHECK(lp[2] == Approx(-log_v).epsilon(1e-7));
    CHECK(h[2] == Approx(log_v).epsilon(1e-7));
    // Row 3: z gap exactly 40, so log p = -log(1 + a) and H = log(1 + a) + 40 a / (1 + a) with
    // a = (V-1) e^-40 ~ 2e-13: tiny, and still resolved to ~1e-6 relative.
    const double a = static_cast<double>(v - 1) * std::exp(-40.0);
    CHECK(h[3] == Approx(std::log1p(a) + 40 * a / (1 + a)).epsilon(1e-6));
    CHECK(lp[3] == Approx(-std::log1p(a)).epsilon(1e-6));
    const RefRow ref = ref_row(&x[static_cast<size_t>(3 * v)], v, 9, 1.0 / temp);
    CHECK(h[3] == Approx(ref.entropy).epsilon(1e-6));
    CHECK(lp[3] == Approx(ref.logprob).epsilon(1e-6));
    // The target away from the peak of row 0: log p = -(2e4 / T).
    Tensor other = Tensor::from_ints({0, 5, 50256, 9}, Shape{4});
    CHECK(ops::token_logprob_entropy(logits, other, temp).logprob.to_vector()[0] == Approx(-2e4 / temp).epsilon(1e-7));
  }
  // Random logits in +-1e4 against the reference with the same fp32 z.
  Tensor logits = Tensor::from_vector(scaled(random_values(6 * 997, 52), 1e4f), Shape{6, 997});
  Tensor targets = random_ids(Shape{6}, 53, 997);
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    std::vector<float> x = logits.to_vector();
    std::vector<int32_t> t = targets.to_int_vector();
    std::vector<double> lp, h;
    for (int64_t r = 0; r < 6; ++r) {
      RefRow ref = ref_row(&x[static_cast<size_t>(r * 997)], 997, t[static_cast<size_t>(r)], 1.0 / temp);
      lp.push_back(ref.logprob);
      h.push_back(ref.entropy);
    }
    ops::LogprobEntropy out = ops::token_logprob_entropy(logits, targets, temp);
    CHECK(close(out.logprob.to_vector(), lp, 1e-3, 1e-6));  // |log p| up to ~4e4: fp32 rounding of the result
    CHECK(close(out.entropy.to_vector(), h, 1e-6, 1e-5));
  }
}

TEST_CASE("token_logprob_entropy: gradients of both outputs (gradcheck 2e-3 abs + 2e-2 rel, h = 1e-2)",
          "[ops][logprob_entropy][grad][ops_embed]") {
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    INFO("T=" << temp);
    Tensor logits = random_tensor(Shape{3, 7}, 54, -2, 2, true);
    Tensor targets = Tensor::from_ints({0, 6, 3}, Shape{3});
    auto both = [&](const std::vector<Tensor>& in) {
      ops::LogprobEntropy o = ops::token_logprob_entropy(in[0], targets, temp);
      return std::vector<Tensor>{o.logprob, o.entropy};
    };
    CHECK(gradcheck(MultiOp(both), {logits}) == 0);
    // One output alone: the other's gradient arrives undefined.
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::token_logprob_entropy(in[0], targets, temp).logprob; }, {logits}) == 0);
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::token_logprob_entropy(in[0], targets, temp).entropy; }, {logits}) == 0);
  }
  Tensor odd = random_tensor(Shape{1, 1}, 55, -2, 2, true);
  CHECK(gradcheck([](const std::vector<Tensor>& in) {
    ops::LogprobEntropy o = ops::token_logprob_entropy(in[0], Tensor::from_ints({0}, Shape{1}));
    return std::vector<Tensor>{o.logprob, o.entropy};
  }, {odd}) == 0);
}

TEST_CASE("token_logprob_entropy: analytic gradient against the double formula at large logits",
          "[ops][logprob_entropy][grad][ops_embed]") {
  // Backward recomputes p = exp(z - lse) from the fp32 lse, which is within delta = 2^-24 |lse| of the
  // true one (half an ulp: the same as the rounding of logits of that size). So each element may be off
  // by p delta (|a| + |b| (|log p + H| + 1)) with a, b the output gradients over T; the check allows twice
  // that plus 1e-7. Near |z| ~ 2e4 this is ~1e-3 relative; for ordinary logits (|lse| < 100) ~1e-5.
  const int64_t n = 4, v = 211;
  std::vector<float> x = random_values(n * v, 56, -3, 3);
  for (int64_t k = 0; k < v; ++k) x[static_cast<size_t>(k)] += 1e4f;        // row 0: near +1e4, spread 6
  for (int64_t k = 0; k < v; ++k) x[static_cast<size_t>(v + k)] -= 1e4f;    // row 1: near -1e4
  for (int64_t k = 0; k < v; ++k) x[static_cast<size_t>(2 * v + k)] *= 3e3f;  // row 2: +-9e3, one-hot in effect
  Tensor targets = Tensor::from_ints({4, 100, 17, 210}, Shape{n});            // row 3: ordinary logits in +-3
  std::vector<float> glp = random_values(n, 57), gh = random_values(n, 58);
  for (float temp : {0.5f, 1.0f, 2.0f}) {
    INFO("T=" << temp);
    Tensor logits = Tensor::from_vector(x, Shape{n, v});
    logits.set_requires_grad(true);
    ops::LogprobEntropy o = ops::token_logprob_entropy(logits, targets, temp);
    run_backward({o.logprob, o.entropy}, {Tensor::from_vector(glp, Shape{n}), Tensor::from_vector(gh, Shape{n})}, false);
    std::vector<float> got = logits.grad().to_vector();
    int bad = 0;
    for (int64_t r = 0; r < n; ++r) {
      const int32_t t = targets.to_int_vector()[static_cast<size_t>(r)];
      RefRow ref = ref_row(&x[static_cast<size_t>(r * v)], v, t, 1.0f / temp);
      const double delta = std::ldexp(std::abs(ref.lse), -24);
      const double a = glp[static_cast<size_t>(r)] / temp, b = gh[static_cast<size_t>(r)] / temp;
      for (int64_t k = 0; k < v; ++k) {
        const double p = ref.p[static_cast<size_t>(k)];
        const double lp = x[static_cast<size_t>(r * v + k)] / temp - ref.lse;
        const double want = a * ((k == t) - p) - b * p * (lp + ref.entropy);
        const double allowed = 1e-7 + 2 * p * delta * (std::abs(a) + std::abs(b) * (std::abs(lp + ref.entropy) + 1));
        const double diff = std::abs(got[static_cast<size_t>(r * v + k)] - want);
        if (!(diff <= allowed) && bad++ < 4)
          UNSCOPED_INFO("row " << r << " k " << k << ": got " << got[static_cast<size_t>(r * v + k)] << " want " << want
                               << " allowed " << allowed);
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("token_logprob_entropy: bad targets, temperature and shapes are reported", "[ops][logprob_entropy][errors][ops_embed]") {
  Tensor logits = Tensor::zeros(Shape{3, 7});
  CHECK_THROWS_WITH(ops::token_logprob_entropy(logits, Tensor::from_ints({0, 1, -100}, Shape{3})),
                    Contains("token_logprob_entropy: target -100 at row 2 is out of range [0, 7)"));
  CHECK_THROWS_WITH(ops::token_logprob_entropy(logits, Tensor::from_ints({7, 1, 2}, Shape{3})),
                    Contains("token_logprob_entropy: target 7 at row 0 is out of range [0, 7)"));
  CHECK_THROWS_WITH(ops::token_logprob_entropy(logits, Tensor::from_ints({0, 1, 2}, Shape{3}), 0.0f),
                    Contains("token_logprob_entropy: temperature must be positive and finite (with a finite 1/T), got 0"));
  CHECK_THROWS_WITH(ops::token_logprob_entropy(logits, Tensor::from_ints({0, 1, 2}, Shape{3}), 1e-39f),
                    Contains("temperature must be positive and finite"));
  CHECK_THROWS_WITH(ops::token_logprob_entropy(logits, Tensor::from_ints({0, 1, 2}, Shape{3, 1})),
                    Contains("token_logprob_entropy: targets must have the logits' leading shape [3]"));
  CHECK_THROWS_WITH(ops::token_logprob_entropy(Tensor::scalar(1.0f), Tensor::from_ints({0}, Shape{})),
                    Contains("token_logprob_entropy: argument 'logits' needs rank >= 1"));
}

TEST_CASE("token_logprob_entropy: bitwise identical with 1 and 2 threads", "[ops][logprob_entropy][determinism][ops_embed]") {
  Tensor logits = random_tensor(Shape{37, 50257}, 59, -10, 10);
  Tensor targets = random_ids(Shape{37}, 60, 50257);
  Tensor glp = random_tensor(Shape{37}, 61), gh = random_tensor(Shape{37}, 62);
  auto [one, two] = with_1_and_2_threads([&] {
    Tensor x = logits.clone();
    x.set_requires_grad(true);
    ops::LogprobEntropy o = ops::token_logprob_entropy(x, targets, 0.7f);
    run_backward({o.logprob, o.entropy}, {glp, gh}, false);
    return std::make_tuple(o.logprob.to_vector(), o.entropy.to_vector(), x.grad().to_vector());
  });
  CHECK(bitwise_equal(std::get<0>(one), std::get<0>(two)));
  CHECK(bitwise_equal(std::get<1>(one), std::get<1>(two)));
  CHECK(bitwise_equal(std::get<2>(one), std::get<2>(two)));
}

TEST_CASE("token_logprob_entropy: every backend agrees with the CPU", "[ops][logprob_entropy][backends][ops_embed]") {
  Tensor logits = random_tensor(Shape{11, 2053}, 63, -6, 6, true);
  Tensor targets = random_ids(Shape{11}, 64, 2053);
  check_backends("token_logprob_entropy", [](const std::vector<Tensor>& in) {
    ops::LogprobEntropy o = ops::token_logprob_entropy(in[0], in[1], 0.8f);
    return std::vector<Tensor>{o.logprob, o.entropy};
  }, {logits, targets}, 1e-5);
}
