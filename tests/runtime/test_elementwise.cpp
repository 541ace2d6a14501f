#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "runtime/ops.h"
#include "tests/support/backends.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

TEST_CASE("elementwise: hand-computed values with broadcasting", "[ops][elementwise]") {
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor row = Tensor::from_vector({10, 20, 30}, Shape{3});
  Tensor col = Tensor::from_vector({2, 4}, Shape{2, 1});
  CHECK(ops::add(a, row).to_vector() == std::vector<float>{11, 22, 33, 14, 25, 36});
  CHECK(ops::sub(row, a).to_vector() == std::vector<float>{9, 18, 27, 6, 15, 24});
  CHECK(ops::mul(a, col).to_vector() == std::vector<float>{2, 4, 6, 16, 20, 24});
  CHECK(ops::div(a, col).to_vector() == std::vector<float>{0.5f, 1, 1.5f, 1, 1.25f, 1.5f});
  CHECK(ops::mul(a, Tensor::scalar(2)).to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12});
  CHECK((a * 2.0f + 1.0f).to_vector() == std::vector<float>{3, 5, 7, 9, 11, 13});
  CHECK(ops::relu(Tensor::from_vector({-1, 0, 2}, Shape{3})).to_vector() == std::vector<float>{0, 0, 2});
  CHECK(ops::gelu(Tensor::from_vector({1.0f}, Shape{1})).item() == Approx(0.841192f).epsilon(1e-5));
  CHECK(ops::silu(Tensor::from_vector({1.0f}, Shape{1})).item() == Approx(0.731059f).epsilon(1e-5));
  CHECK(ops::pow_scalar(Tensor::from_vector({3.0f}, Shape{1}), 2.0f).item() == Approx(9.0f));
}

TEST_CASE("elementwise: broadcast errors name the op and both shapes", "[ops][elementwise][errors]") {
  Tensor a = Tensor::zeros(Shape{2, 3});
  CHECK_THROWS_WITH(ops::add(a, Tensor::zeros(Shape{2})), Contains("add: cannot broadcast shapes [2, 3] and [2]"));
  CHECK_THROWS_WITH(ops::mul(a, Tensor::zeros(Shape{4, 3})), Contains("mul: cannot broadcast shapes [2, 3] and [4, 3]"));
  CHECK_THROWS_WITH(ops::add(a, Tensor::from_ints({1, 2, 3}, Shape{3})), Contains("must be f32"));
}

TEST_CASE("elementwise: binary gradients, every broadcast layout (odd shapes)", "[ops][elementwise][grad]") {
  const std::vector<Shape> other_shapes = {Shape{3, 7}, Shape{7}, Shape{1, 7}, Shape{3, 1}, Shape{}};
  for (int op = 0; op < 4; ++op) {
    for (const Shape& bs : other_shapes) {
      for (bool swap : {false, true}) {
        Tensor a = random_tensor(Shape{3, 7}, 1 + op, -1, 1, true);
        Tensor b = random_tensor(bs, 2 + op, 0.5f, 1.5f, true);  // positive: div stays smooth
        auto f = [&](const std::vector<Tensor>& in) {
          const Tensor& x = swap ? in[1] : in[0];
          const Tensor& y = swap ? in[0] : in[1];
          switch (op) {
            case 0: return ops::add(x, y);
            case 1: return ops::sub(x, y);
            case 2: return ops::mul(x, y);
            default: return ops::div(x, y);
          }
        };
        INFO("op " << op << " b shape " << bs << " swapped " << swap);
        // div by a in [-1,1] is steep when swapped; keep a positive there.
        if (op == 3 && swap) a = random_tensor(Shape{3, 7}, 5, 0.5f, 1.5f, true);
        CHECK(gradcheck(f, {a, b}, {1e-2, 2e-3, 1e-2}) == 0);
      }
    }
  }
}

TEST_CASE("elementwise: unary gradients (tolerance 2e-3 abs + 1e-2 rel, h = 1e-2)", "[ops][elementwise][grad]") {
  using Fn = Tensor (*)(const Tensor&);
  const std::vector<std::pair<const char*, Fn>> fns = {
      {"neg", ops::neg},   {"exp", ops::exp},         {"relu", ops::relu}, {"gelu", ops::gelu},
      {"silu", ops::silu}, {"sigmoid", ops::sigmoid}, {"tanh", ops::tanh}, {"square", ops::square}};
  for (auto [name, fn] : fns) {
    INFO(name);
    // 1, a prime, and a length that is not a multiple of any SIMD width.
    for (int64_t n : {1, 13, 67}) {
      Tensor x = random_tensor(Shape{n}, 7 + n, -2, 2, true);
      if (std::string(name) == "relu") {  // keep away from the kink
        std::vector<float> v = x.to_vector();
        for (float& e : v) e = std::abs(e) < 0.05f ? 0.5f : e;
        x = Tensor::from_vector(v, Shape{n});
        x.set_requires_grad(true);
      }
      CHECK(gradcheck([&, fn = fn](const std::vector<Tensor>& in) { return fn(in[0]); }, {x}, {1e-2, 2e-3, 1e-2}) == 0);
    }
  }
  Tensor pos = random_tensor(Shape{11}, 3, 0.5f, 2.0f, true);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::log(in[0]); }, {pos}) == 0);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::sqrt(in[0]); }, {pos}) == 0);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::pow_scalar(in[0], 2.5f); }, {pos}) == 0);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::add_scalar(in[0], 3.0f) * 0.5f; }, {pos}) == 0);
}

TEST_CASE("elementwise: every backend agrees with the CPU", "[ops][elementwise][backends]") {
  Tensor a = random_tensor(Shape{5, 9}, 1, -1, 1, true);
  Tensor b = random_tensor(Shape{9}, 2, 0.5f, 1.5f, true);
  check_backends("mul+div+gelu", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::gelu(ops::div(ops::mul(in[0], in[1]), in[1]))};
  }, {a, b}, 1e-5);
}

TEST_CASE("elementwise: swiglu gradients, and the fused CPU pass gives silu-then-mul's bits both ways",
          "[ops][elementwise][grad][determinism]") {
  Tensor gate = random_tensor(Shape{7, 13}, 3, -4, 4, true), up = random_tensor(Shape{7, 13}, 4, -2, 2, true);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::swiglu(in[0], in[1]); }, {gate, up},
                  {1e-2, 2e-3, 1e-2}) == 0);
  REQUIRE(backend_for(Device::cpu).supports(Capability::fused_swiglu));
  // A weight on the output so that every element's gradient differs.
  Tensor w = random_tensor(Shape{7, 13}, 5);
  auto run = [&](bool fused) {
    Tensor g = random_tensor(Shape{7, 13}, 3, -4, 4, true), u = random_tensor(Shape{7, 13}, 4, -2, 2, true);
    Tensor out = fused ? ops::swiglu(g, u) : ops::mul(ops::silu(g), u);
    ops::sum_all(ops::mul(out, w)).backward();
    return std::vector<std::vector<float>>{out.to_vector(), g.grad().to_vector(), u.grad().to_vector()};
  };
  const auto fused = run(true), composed = run(false);
  for (size_t i = 0; i < fused.size(); ++i) {
    INFO("output " << i << " (0: forward, 1: d gate, 2: d up)");
    CHECK(std::memcmp(fused[i].data(), composed[i].data(), fused[i].size() * sizeof(float)) == 0);
  }
  CHECK_THROWS_WITH(ops::swiglu(random_tensor(Shape{2, 3}, 1), random_tensor(Shape{3, 2}, 2)),
                    Catch::Contains("swiglu: gate [2, 3] and up [3, 2] must have the same shape"));
}
