#include <catch2/catch.hpp>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/ops.h"
#include "tests/support/random.h"

using namespace gtpo;
using Catch::Contains;

TEST_CASE("tensor: construction, metadata and host round trip", "[tensor]") {
  Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.numel() == 6);
  CHECK(t.size(-1) == 3);
  CHECK(t.dtype() == DType::f32);
  CHECK(t.device() == Device::cpu);
  CHECK(t.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(t.describe() == "f32[2, 3] on cpu");
  CHECK(Tensor::zeros(Shape{3}).to_vector() == std::vector<float>{0, 0, 0});
  CHECK(Tensor::full(Shape{2}, 2.5f).to_vector() == std::vector<float>{2.5f, 2.5f});
  CHECK(Tensor::scalar(7.0f).item() == 7.0f);
  CHECK(Tensor::from_ints({3, 1}, Shape{2}).to_int_vector() == std::vector<int32_t>{3, 1});
}

TEST_CASE("tensor: views share storage, clones do not", "[tensor]") {
  Tensor t = Tensor::from_vector({1, 2, 3, 4}, Shape{2, 2});
  Tensor v = t.view(Shape{4});
  Tensor c = t.clone();
  CHECK(v.same_storage(t));
  CHECK_FALSE(c.same_storage(t));
  t.fill_(9.0f);
  CHECK(v.to_vector() == std::vector<float>{9, 9, 9, 9});
  CHECK(c.to_vector() == std::vector<float>{1, 2, 3, 4});
  Tensor r = ops::reshape(t, Shape{-1, 1});
  CHECK(r.shape() == Shape{4, 1});
  CHECK(r.same_storage(t));
}

TEST_CASE("tensor: bad input gives clear errors", "[tensor][errors]") {
  CHECK_THROWS_WITH(Tensor::from_vector({1, 2, 3}, Shape{2, 2}), Contains("3 values do not fill shape [2, 2]"));
  Tensor t = Tensor::from_vector({1, 2, 3, 4}, Shape{2, 2});
  CHECK_THROWS_WITH(t.view(Shape{3}), Contains("cannot view f32[2, 2] on cpu as shape [3]"));
  CHECK_THROWS_WITH(ops::reshape(t, Shape{3, -1}), Contains("cannot reshape"));
  CHECK_THROWS_WITH(t.item(), Contains("one-element"));
  CHECK_THROWS_WITH(Tensor::from_ints({1}, Shape{1}).data(), Contains("expected an f32 tensor"));
  CHECK_THROWS_WITH(Tensor().shape(), Contains("undefined"));
  CHECK_THROWS_WITH(t.size(2), Contains("axis 2 is out of range for shape [2, 2]"));
}

TEST_CASE("tensor: a missing device is an error, not a crash", "[tensor][errors][devices]") {
  if (device_available(Device::cuda)) {
    Tensor a = Tensor::zeros(Shape{2});
    Tensor b = Tensor::zeros(Shape{2}, Device::cuda);
    CHECK_THROWS_WITH(ops::add(a, b), Contains("add: tensors are on different devices: f32[2] on cpu and f32[2] on cuda"));
    CHECK_THROWS_WITH(ops::matmul(Tensor::zeros(Shape{2, 2}), Tensor::zeros(Shape{2, 2}, Device::cuda)),
                      Contains("different devices"));
  } else {
    CHECK_THROWS_WITH(Tensor::zeros(Shape{2}, Device::cuda), Contains("device cuda is not available"));
  }
}

TEST_CASE("allocator: a steady loop stops reaching the system allocator", "[tensor][allocator]") {
  auto loop = [] {
    Tensor w = testing::random_tensor(Shape{33, 17}, 1, -1, 1, true);
    Tensor x = testing::random_tensor(Shape{5, 33}, 2);
    Tensor loss = ops::sum_all(ops::relu(ops::matmul(x, w)));
    loss.backward();
  };
  loop();  // warm the cache
  const uint64_t before = cpu_backend().allocator_stats().system_allocations;
  for (int i = 0; i < 10; ++i) loop();
  CHECK(cpu_backend().allocator_stats().system_allocations == before);
  CHECK(cpu_backend().allocator_stats().cache_hits > 0);
}
