#include <catch2/catch.hpp>
#include <omp.h>

#include "runtime/ops.h"
#include "tests/support/backends.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

namespace {
// Naive permute of a row-major tensor.
std::vector<float> naive_permute(const std::vector<float>& x, const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& perm) {
  const size_t rank = shape.size();
  std::vector<int64_t> in_strides(rank, 1), out_shape(rank);
  for (size_t d = rank - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * shape[d];
  for (size_t i = 0; i < rank; ++i) out_shape[i] = shape[static_cast<size_t>(perm[i])];
  std::vector<float> out(x.size());
  std::vector<int64_t> idx(rank, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src += idx[i] * in_strides[static_cast<size_t>(perm[i])];
    out[o] = x[static_cast<size_t>(src)];
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < out_shape[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}
}  // namespace

TEST_CASE("layout: transpose and permute values against a naive permute", "[ops][layout]") {
  Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor t = ops::transpose(a, 0, 1);
  CHECK(t.shape() == Shape{3, 2});
  CHECK(t.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(ops::transpose(a, -1, -2).to_vector() == t.to_vector());
  CHECK(ops::transpose(a, 1, 1).to_vector() == a.to_vector());
  CHECK_FALSE(ops::transpose(a, 0, 0).same_storage(a));  // always a fresh contiguous tensor

  Tensor x = random_tensor(Shape{2, 3, 5, 4}, 1);
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2, 3}, {3, 2, 1, 0}, {0, 2, 1, 3}, {1, 3, 0, 2}, {2, 0, 3, 1}};
  for (const auto& p : perms) {
    INFO("perm " << Shape(p));
    Tensor y = ops::permute(x, p);
    CHECK(y.shape() == Shape{x.size(p[0]), x.size(p[1]), x.size(p[2]), x.size(p[3])});
    CHECK(y.to_vector() == naive_permute(x.to_vector(), x.shape().dims(), p));
  }
  CHECK(ops::permute(x, {0, -2, 1, -1}).to_vector() == ops::permute(x, {0, 2, 1, 3}).to_vector());
  // [B, T, H, D] -> [B, H, T, D] is transpose(1, 2).
  CHECK(ops::transpose(x, 1, 2).to_vector() == ops::permute(x, {0, 2, 1, 3}).to_vector());
  CHECK(ops::permute(Tensor::zeros(Shape{2, 0, 3}), {2, 0, 1}).shape() == Shape{3, 2, 0});
}

// Gradchecks in this file use the default tolerance (h 1e-2, 2e-3 abs + 2e-2 rel); layout ops are exact.
TEST_CASE("layout: transpose and permute gradients", "[ops][layout][grad]") {
  Tensor x = random_tensor(Shape{2, 3, 4}, 2, -1, 1, true);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::transpose(in[0], 0, -1); }, {x}) == 0);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::permute(in[0], {1, 2, 0}); }, {x}) == 0);
  CHECK(gradcheck([](const std::vector<Tensor>& in) { return ops::permute(in[0], {2, 0, 1}); }, {x}) == 0);
}

TEST_CASE("layout: slice values, views and copies", "[ops][layout]") {
  Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
  // Along axis 0: a view into x's storage.
  Tensor rows = ops::slice(x, 0, 1, 3);
  CHECK(rows.shape() == Shape{2, 4});
  CHECK(rows.to_vector() == std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(rows.same_storage(x));
  // Along the last axis with a leading dim > 1: a copy.
  Tensor cols = ops::slice(x, 1, 1, 3);
  CHECK(cols.shape() == Shape{3, 2});
  CHECK(cols.to_vector() == std::vector<float>{1, 2, 5, 6, 9, 10});
  CHECK_FALSE(cols.same_storage(x));
  // Negative axis and bounds.
  CHECK(ops::slice(x, -1, -3, -1).to_vector() == cols.to_vector());
  CHECK(ops::slice(x, -2, -1, 3).to_vector() == std::vector<float>{8, 9, 10, 11});
  // Leading dims of size 1: still one contiguous block, a view.
  Tensor y = x.view(Shape{1, 1, 3, 4});
  Tensor v = ops::slice(y, 2, 2, 3);
  CHECK(v.same_storage(x));
  CHECK(v.shape() == Shape{1, 1, 1, 4});
  CHECK(v.to_vector() == std::vector<float>{8, 9, 10, 11});
  // Slicing a view of a view keeps the offsets straight.
  CHECK(ops::slice(ops::slice(x, 0, 1, 3), 0, 1, 2).to_vector() == std::vector<float>{8, 9, 10, 11});
  CHECK(ops::slice(ops::slice(x, 0, 1, 3), 1, 3, 4).to_vector() == std::vector<float>{7, 11});
  // The whole axis is a view too; an empty range is fine.
  CHECK(ops::slice(x, 1, 0, 4).same_storage(x));
  CHECK(ops::slice(x, 1, 2, 2).shape() == Shape{3, 0});
  // i32 tensors (token ids) slice the same way.
  Tensor ids = Tensor::from_ints({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  CHECK(ops::slice(ids, 1, 1, 3).to_int_vector() == std::vector<int32_t>{2, 3, 5, 6});
  CHECK(ops::slice(ids, 0, 1, 2).to_int_vector() == std::vector<int32_t>{4, 5, 6});
  // A 3-D middle-axis slice.
  Tensor z = random_tensor(Shape{2, 5, 3}, 4);
  std::vector<float> zv = z.to_vector(), want;
  for (int b = 0; b < 2; ++b)
    for (int t = 1; t < 4; ++t)
      for (int c = 0; c < 3; ++c) want.push_back(zv[static_cast<size_t>((b * 5 + t) * 3 + c)]);
  CHECK(ops::slice(z, 1, 1, 4).to_vector() == want);
}

TEST_CASE("layout: slice errors name the op, the range and the shape", "[ops][layout][errors]") {
  Tensor x = Tensor::zeros(Shape{3, 4});
  CHECK_THROWS_WITH(ops::slice(x, 2, 0, 1), Contains("slice: axis 2 is out of range for shape [3, 4]"));
  CHECK_THROWS_WITH(ops::slice(x, 1, 2, 5), Contains("slice: range [2, 5) is out of bounds for axis 1 of size 4"));
  CHECK_THROWS_WITH(ops::slice(x, 1, 3, 2), Contains("out of bounds"));
  CHECK_THROWS_WITH(ops::slice(x, 0, -4, 1), Contains("out of bounds"));
  CHECK_THROWS_WITH(ops::slice(Tensor::scalar(1), 0, 0, 1), Contains("slice: axis 0 is out of range for shape []"));
  CHECK_THROWS_WITH(ops::permute(x, {0, 0}), Contains("permute: axis 0 appears twice"));
  CHECK_THROWS_WITH(ops::permute(x, {0}), Contains("permute: perm has 1 entries"));
  CHECK_THROWS_WITH(ops::permute(x, {0, 2}), Contains("permute: entry 2 is out of range"));
  CHECK_THROWS_WITH(ops::transpose(x, 0, 2), Contains("transpose: axis 2 is out of range"));
}

TEST_CASE("layout: slice gradients scatter into zeros (view and copy paths)", "[ops][layout][grad]") {
  Tensor x = random_tensor(Shape{4, 5, 3}, 5, -1, 1, true);
  for (auto [axis, b, e] : {std::tuple<int64_t, int64_t, int64_t>{0, 1, 3}, {1, 2, 5}, {-1, 0, 2}, {1, 0, 5}}) {
    INFO("axis " << axis << " [" << b << ", " << e << ")");
    CHECK(gradcheck([&, axis = axis, b = b, e = e](const std::vector<Tensor>& in) { return ops::slice(in[0], axis, b, e); }, {x}) == 0);
  }
  Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3}).set_requires_grad(true);
  ops::sum_all(ops::slice(w, 1, 1, 2)).backward();
  CHECK(w.grad().to_vector() == std::vector<float>{0, 1, 0, 0, 1, 0});
  w.zero_grad();
  ops::sum_all(ops::slice(w, 0, 1, 2)).backward();
  CHECK(w.grad().to_vector() == std::vector<float>{0, 0, 0, 1, 1, 1});
}

TEST_CASE("layout: concat values, dtypes and errors", "[ops][layout]") {
  Tensor a = Tensor::from_vector({1, 2, 3, 4}, Shape{2, 2});
  Tensor b = Tensor::from_vector({5, 6}, Shape{2, 1});
  Tensor c = Tensor::from_vector({7, 8, 9, 10, 11, 12}, Shape{2, 3});
  Tensor y = ops::concat({a, b, c}, -1);
  CHECK(y.shape() == Shape{2, 6});
  CHECK(y.to_vector() == std::vector<float>{1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12});
  Tensor r = ops::concat({a, Tensor::from_vector({9, 9}, Shape{1, 2})}, 0);
  CHECK(r.to_vector() == std::vector<float>{1, 2, 3, 4, 9, 9});
  CHECK(ops::concat({a}, 0).to_vector() == a.to_vector());
  CHECK(ops::concat({a, Tensor::zeros(Shape{2, 0})}, 1).to_vector() == a.to_vector());
  Tensor ids = ops::concat({Tensor::from_ints({1, 2}, Shape{2}), Tensor::from_ints({3}, Shape{1})}, 0);
  CHECK(ids.dtype() == DType::i32);
  CHECK(ids.to_int_vector() == std::vector<int32_t>{1, 2, 3});

  CHECK_THROWS_WITH(ops::concat({}, 0), Contains("concat: no tensors given"));
  CHECK_THROWS_WITH(ops::concat({a, c}, 0),
                    Contains("concat: tensor 1 has shape [2, 3] but tensor 0 has shape [2, 2]; all dims but axis 0"));
  CHECK_THROWS_WITH(ops::concat({a, Tensor::zeros(Shape{4})}, 0), Contains("concat: tensor 1 has shape [4]"));
  CHECK_THROWS_WITH(ops::concat({a, Tensor::from_ints({1, 2}, Shape{1, 2})}, 0), Contains("concat: tensor 1 is i32"));
  CHECK_THROWS_WITH(ops::concat({a, b}, 2), Contains("concat: axis 2 is out of range"));
}

TEST_CASE("layout: concat gradients, including an input that needs none", "[ops][layout][grad]") {
  Tensor a = random_tensor(Shape{2, 3, 4}, 6, -1, 1, true);
  Tensor b = random_tensor(Shape{2, 1, 4}, 7, -1, 1, true);
  Tensor c = random_tensor(Shape{2, 2, 4}, 8);  // constant
  for (int64_t axis : {1, -2}) {
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::concat({in[0], in[1], in[2]}, axis); },
                    {a, b, c}) == 0);
  }
  Tensor d = random_tensor(Shape{2, 3, 1}, 9, -1, 1, true);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::concat({in[0], in[1]}, 2); }, {a, d}) == 0);
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::concat({in[0], in[0]}, 0); }, {a}) == 0);
}

TEST_CASE("layout: split values, views and gradients", "[ops][layout][grad]") {
  Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{2, 6});
  std::vector<Tensor> parts = ops::split(x, -1, {1, 3, 2});
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].to_vector() == std::vector<float>{0, 6});
  CHECK(parts[1].to_vector() == std::vector<float>{1, 2, 3, 7, 8, 9});
  CHECK(parts[2].shape() == Shape{2, 2});
  CHECK(parts[2].to_vector() == std::vector<float>{4, 5, 10, 11});
  std::vector<Tensor> halves = ops::split(x, 0, {1, 1});
  CHECK(halves[1].same_storage(x));
  CHECK(halves[1].to_vector() == std::vector<float>{6, 7, 8, 9, 10, 11});
  CHECK(ops::concat(parts, 1).to_vector() == x.to_vector());
  CHECK(ops::split(x, 1, {6, 0})[1].shape() == Shape{2, 0});
  CHECK_THROWS_WITH(ops::split(x, 1, {2, 2}), Contains("split: sizes sum to 4 but axis 1 of f32[2, 6] on cpu has size 6"));
  CHECK_THROWS_WITH(ops::split(x, 1, {7, -1}), Contains("split: negative size -1"));

  // Every piece differentiable (the fused qkv projection case), on both the view and copy paths.
  Tensor q = random_tensor(Shape{3, 2, 9}, 10, -1, 1, true);
  for (int64_t axis : {0, 1, -1}) {
    INFO("axis " << axis);
    const std::vector<int64_t> sizes = axis == -1 ? std::vector<int64_t>{3, 4, 2}
                                                  : (axis == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1, 1});
    CHECK(gradcheck(MultiOp([&](const std::vector<Tensor>& in) { return ops::split(in[0], axis, sizes); }), {q}) == 0);
  }
  // Only some pieces reach the loss: the rest of the gradient is zero.
  Tensor w = Tensor::from_vector({1, 2, 3, 4, 5, 6}, Shape{2, 3}).set_requires_grad(true);
  std::vector<Tensor> p = ops::split(w, 1, {1, 1, 1});
  ops::sum_all(ops::add(ops::mul_scalar(p[0], 2.0f), p[2])).backward();
  CHECK(w.grad().to_vector() == std::vector<float>{2, 0, 1, 2, 0, 1});
  // The same piece used twice, and pieces recombined.
  Tensor u = random_tensor(Shape{4, 6}, 11, -1, 1, true);
  CHECK(gradcheck([](const std::vector<Tensor>& in) {
          std::vector<Tensor> s = ops::split(in[0], 1, {2, 4});
          return ops::concat({ops::mul(s[0], s[0]), s[1], s[0]}, 1);
        }, {u}) == 0);
}

TEST_CASE("layout: every backend agrees with the CPU", "[ops][layout][backends]") {
  Tensor x = random_tensor(Shape{3, 5, 4, 6}, 12, -1, 1, true);
  Tensor y = random_tensor(Shape{3, 2, 4, 6}, 13, -1, 1, true);
  check_backends("permute+slice+concat+split", [](const std::vector<Tensor>& in) {
    std::vector<Tensor> s = ops::split(in[0], 1, {2, 3});
    return std::vector<Tensor>{ops::permute(in[0], {2, 0, 3, 1}), ops::slice(in[0], 2, 1, 3),
                               ops::concat({in[0], in[1]}, 1), s[0], s[1], ops::transpose(in[1], 1, 3)};
  }, {x, y}, 0.0);
}

TEST_CASE("layout: results are bitwise identical for any thread count", "[ops][layout][determinism]") {
  Tensor x = random_tensor(Shape{8, 64, 4, 32}, 14, -1, 1, true);
  auto run = [&]() {
    x.zero_grad();
    std::vector<Tensor> s = ops::split(x, 1, {20, 44});
    Tensor y = ops::concat({ops::permute(s[1], {0, 2, 1, 3}), ops::transpose(ops::slice(s[0], 1, 4, 8), 1, 2)}, 2);
    y.backward(random_tensor(y.shape(), 15));
    std::vector<float> all = y.to_vector(), g = x.grad().to_vector();
    all.insert(all.end(), g.begin(), g.end());
    return all;
  };
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const std::vector<float> one = run();
  omp_set_num_threads(2);
  const std::vector<float> two = run();
  omp_set_num_threads(before);
  CHECK(one == two);
}

TEST_CASE("write_positions: a KV cache's append, by entry or into named rows, on every backend",
          "[ops][layout]") {
  std::vector<Device> devices = {Device::cpu};
  for (Device d : testing::accelerator_devices()) devices.push_back(d);
  for (Device device : devices) {
    CAPTURE(device_name(device));
    // dst [3 entries, 4 positions, 2 features]; src [2 entries, 2 positions, 2 features].
    const std::vector<float> src_values = {1, 2, 3, 4, /**/ 5, 6, 7, 8};
    Tensor src = Tensor::from_vector(src_values, {2, 2, 2}, device);
    Tensor dst = Tensor::zeros({3, 4, 2}, device);
    ops::write_positions(dst, src, 1);  // entries 0 and 1, positions 1-2
    std::vector<float> want(24, 0.0f);
    for (int b = 0; b < 2; ++b)
      for (int t = 0; t < 2; ++t)
        for (int f = 0; f < 2; ++f)
          want[static_cast<size_t>(b * 8 + (1 + t) * 2 + f)] =
              src_values[static_cast<size_t>(b * 4 + t * 2 + f)];
    CHECK(dst.to_vector() == want);
    Tensor named = Tensor::zeros({3, 4, 2}, device);
    ops::write_positions(named, src, 2, {2, 0});  // src entry 0 -> row 2, entry 1 -> row 0, positions 2-3
    std::vector<float> want_named(24, 0.0f);
    for (int t = 0; t < 2; ++t)
      for (int f = 0; f < 2; ++f) {
        want_named[static_cast<size_t>(2 * 8 + (2 + t) * 2 + f)] = src_values[static_cast<size_t>(t * 2 + f)];
        want_named[static_cast<size_t>(0 * 8 + (2 + t) * 2 + f)] =
            src_values[static_cast<size_t>(4 + t * 2 + f)];
      }
    CHECK(named.to_vector() == want_named);
    // A run of consecutive rows (one strided copy) and a row after a gap: entries 0-2 -> rows 0, 1 and 3.
    Tensor runs = Tensor::zeros({4, 4, 2}, device);
    std::vector<float> three(12);
    for (size_t i = 0; i < three.size(); ++i) three[i] = static_cast<float>(i + 1);
    ops::write_positions(runs, Tensor::from_vector(three, {3, 2, 2}, device), 1, {0, 1, 3});
    std::vector<float> want_runs(32, 0.0f);
    const int rows_of[] = {0, 1, 3};
    for (int b = 0; b < 3; ++b)
      for (int t = 0; t < 2; ++t)
        for (int f = 0; f < 2; ++f)
          want_runs[static_cast<size_t>(rows_of[b] * 8 + (1 + t) * 2 + f)] =
              three[static_cast<size_t>(b * 4 + t * 2 + f)];
    CHECK(runs.to_vector() == want_runs);
    CHECK_THROWS_WITH(ops::write_positions(dst, src, 3), Contains("positions [3, 5) exceed the 4 of dst"));
    CHECK_THROWS_WITH(ops::write_positions(dst, src, 0, {0, 3}), Contains("row 3 outside dst's 3"));
    CHECK_THROWS_WITH(ops::write_positions(dst, Tensor::zeros({2, 2, 3}, device), 0),
                      Contains("differ past axis 1"));
  }
}
