#include <catch2/catch.hpp>

#include "runtime/backend.h"
#include "runtime/ops.h"
#include "tests/support/random.h"

using namespace gtpo;
using Catch::Contains;

TEST_CASE("autograd: gradients accumulate across uses and across backward calls", "[autograd]") {
  Tensor x = Tensor::from_vector({1, 2, 3}, Shape{3}).set_requires_grad(true);
  // y = sum(x * x + 3 x) -> dy/dx = 2x + 3
  Tensor y = ops::sum_all(ops::add(ops::mul(x, x), ops::mul_scalar(x, 3.0f)));
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{5, 7, 9});
  Tensor y2 = ops::sum_all(x);
  y2.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{6, 8, 10});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("autograd: no-grad guard records nothing", "[autograd]") {
  Tensor x = Tensor::from_vector({1, 2}, Shape{2}).set_requires_grad(true);
  {
    NoGradGuard guard;
    CHECK_FALSE(grad_mode_enabled());
    Tensor y = ops::mul(x, x);
    CHECK_FALSE(y.requires_grad());
    CHECK_THROWS_WITH(ops::sum_all(y).backward(), Contains("does not require grad"));
  }
  CHECK(grad_mode_enabled());
  CHECK(ops::mul(x, x).requires_grad());
}

TEST_CASE("autograd: backward frees the graph unless retained", "[autograd]") {
  Tensor x = Tensor::from_vector({1, 2}, Shape{2}).set_requires_grad(true);
  Tensor y = ops::sum_all(ops::mul(x, x));
  REQUIRE(y.impl()->grad_fn != nullptr);
  y.backward(Tensor(), /*retain_graph=*/true);
  CHECK(y.impl()->grad_fn->next_edges.size() == 1);
  y.backward();
  CHECK(x.grad().to_vector() == std::vector<float>{4, 8});
  CHECK(y.impl()->grad_fn->next_edges.empty());
}

TEST_CASE("autograd: in-place writes to saved tensors are detected", "[autograd][errors]") {
  Tensor x = Tensor::from_vector({1, 2}, Shape{2}).set_requires_grad(true);
  Tensor w = Tensor::from_vector({3, 4}, Shape{2});
  Tensor y = ops::sum_all(ops::mul(x, w));
  w.fill_(0.0f);
  CHECK_THROWS_WITH(y.backward(), Contains("modified in place after it was saved"));
}

TEST_CASE("autograd: a write through mutable_data bumps the version by itself while a read does not",
          "[autograd][errors]") {
  Tensor x = Tensor::from_vector({1, 2}, Shape{2}).set_requires_grad(true);
  Tensor w = Tensor::from_vector({3, 4}, Shape{2});
  Tensor y = ops::sum_all(ops::mul(x, w));
  (void)w.data();  // reading never invalidates a saved tensor
  (void)w.to_vector();
  y.backward(Tensor(), /*retain_graph=*/true);
  CHECK(x.grad().to_vector() == std::vector<float>{3, 4});
  // What the optimiser, grad clip, KV cache and sampler do: write through the backend into mutable_data().
  w.backend().fill(w.mutable_data(), 7.0f, w.numel());
  CHECK_THROWS_WITH(y.backward(), Contains("modified in place after it was saved"));
  // The same through a view of the storage.
  Tensor v = Tensor::from_vector({5, 6}, Shape{2});
  Tensor z = ops::sum_all(ops::mul(x, v));
  (void)v.view(Shape{1, 2}).mutable_data();
  CHECK_THROWS_WITH(z.backward(), Contains("modified in place after it was saved"));
}

TEST_CASE("autograd: non-scalar backward needs a seed, and a non-leaf cannot be marked", "[autograd][errors]") {
  Tensor x = Tensor::from_vector({1, 2}, Shape{2}).set_requires_grad(true);
  Tensor y = ops::mul_scalar(x, 2.0f);
  CHECK_THROWS_WITH(y.backward(), Contains("needs an explicit seed"));
  CHECK_THROWS_WITH(y.set_requires_grad(true), Contains("only leaf tensors"));
  y.backward(Tensor::from_vector({1, 10}, Shape{2}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 20});
}

TEST_CASE("autograd: diamond graphs sum both paths", "[autograd]") {
  Tensor x = Tensor::from_vector({0.5f, -1.5f}, Shape{2}).set_requires_grad(true);
  Tensor a = ops::exp(x);
  Tensor b = ops::mul(a, a);      // e^{2x}
  Tensor c = ops::add(a, b);      // e^x + e^{2x}
  ops::sum_all(c).backward();
  std::vector<float> g = x.grad().to_vector();
  for (int i = 0; i < 2; ++i) {
    const float v = i == 0 ? 0.5f : -1.5f;
    CHECK(g[i] == Approx(std::exp(v) + 2 * std::exp(2 * v)).epsilon(1e-6));
  }
}
