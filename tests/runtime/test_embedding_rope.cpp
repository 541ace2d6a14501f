#include <omp.h>

#include <catch2/catch.hpp>

#include "tests/support/determinism.h"
#include <cmath>
#include <cstring>

#include "runtime/ops.h"
#include "tests/support/backends.h"
#include "tests/support/gradcheck.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

namespace {


// Hugging Face Llama's apply_rotary_pos_emb, in double, for x [B, T, H, D] and positions [B, T]:
// inv_freq_i = theta^(-2i/D), emb = cat(freqs, freqs), out = x cos(emb) + rotate_half(x) sin(emb),
// rotate_half(x) = cat(-x[D/2:], x[:D/2]).
std::vector<float> hf_rope(const std::vector<float>& x, const std::vector<int32_t>& pos, int64_t bt, int64_t h,
                           int64_t d, double theta) {
  std::vector<float> out(x.size());
  const int64_t half = d / 2;
  for (int64_t r = 0; r < bt; ++r)
    for (int64_t hh = 0; hh < h; ++hh) {
      const float* xi = &x[static_cast<size_t>((r * h + hh) * d)];
      for (int64_t j = 0; j < d; ++j) {
        const double inv_freq = 1.0 / std::pow(theta, static_cast<double>(2 * (j % half)) / static_cast<double>(d));
        const double emb = pos[static_cast<size_t>(r)] * inv_freq;
        const double rotated = j < half ? -static_cast<double>(xi[j + half]) : static_cast<double>(xi[j - half]);
        out[static_cast<size_t>((r * h + hh) * d + j)] = static_cast<float>(xi[j] * std::cos(emb) + rotated * std::sin(emb));
      }
    }
  return out;
}

}  // namespace

// ---- embedding ------------------------------------------------------------------------------------

TEST_CASE("embedding: gathers table rows for ids of any shape", "[ops][embedding][ops_embed]") {
  Tensor table = Tensor::from_vector({0, 1, 10, 11, 20, 21}, Shape{3, 2});
  Tensor ids = Tensor::from_ints({2, 0, 2, 1}, Shape{2, 2});
  Tensor out = ops::embedding(table, ids);
  CHECK(out.shape() == Shape{2, 2, 2});
  CHECK(out.to_vector() == std::vector<float>{20, 21, 0, 1, 20, 21, 10, 11});
  CHECK(ops::embedding(table, Tensor::from_ints({1}, Shape{})).to_vector() == std::vector<float>{10, 11});
  CHECK(ops::embedding(table, Tensor::from_ints({}, Shape{0})).shape() == Shape{0, 2});
  // Odd sizes: V = 1, C = 1 and primes.
  CHECK(ops::embedding(Tensor::from_vector({7}, Shape{1, 1}), Tensor::from_ints({0, 0, 0}, Shape{3})).to_vector() ==
        std::vector<float>{7, 7, 7});
  Tensor big = random_tensor(Shape{13, 17}, 1);
  Tensor big_ids = random_ids(Shape{37}, 2, 13);
  std::vector<float> got = ops::embedding(big, big_ids).to_vector(), t = big.to_vector();
  std::vector<int32_t> iv = big_ids.to_int_vector();
  bool same = true;
  for (size_t r = 0; r < iv.size(); ++r)
    for (size_t c = 0; c < 17; ++c) same = same && got[r * 17 + c] == t[static_cast<size_t>(iv[r]) * 17 + c];
  CHECK(same);
}

TEST_CASE("embedding: table gradient is the id-ordered sum of output-gradient rows", "[ops][embedding][grad][ops_embed]") {
  const int64_t vocab = 11, dim = 19, n = 53;
  Tensor table = random_tensor(Shape{vocab, dim}, 3, -1, 1, true);
  Tensor ids = random_ids(Shape{n}, 4, 5);  // many repeats, several untouched rows
  Tensor gy = random_tensor(Shape{n, dim}, 5);
  ops::embedding(table, ids).backward(gy);
  // The same additions in the same order as a serial loop: bitwise equal.
  std::vector<float> want(static_cast<size_t>(vocab * dim), 0.0f), g = gy.to_vector();
  std::vector<int32_t> iv = ids.to_int_vector();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < dim; ++c) want[static_cast<size_t>(iv[static_cast<size_t>(r)] * dim + c)] += g[static_cast<size_t>(r * dim + c)];
  CHECK(bitwise_equal(table.grad().to_vector(), want));

  // Finite differences (the op is linear: default tolerance 2e-3 abs + 2e-2 rel, h = 1e-2).
  Tensor t2 = random_tensor(Shape{7, 3}, 6, -1, 1, true);
  Tensor ids2 = Tensor::from_ints({6, 0, 6, 3, 6, 1}, Shape{2, 3});
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::embedding(in[0], ids2); }, {t2}) == 0);
}

TEST_CASE("embedding: bad ids and shapes name the op, the id, its position and V", "[ops][embedding][errors][ops_embed]") {
  Tensor table = Tensor::zeros(Shape{7, 4});
  CHECK_THROWS_WITH(ops::embedding(table, Tensor::from_ints({1, 2, 3, 4, 7, 5}, Shape{2, 3})),
                    Contains("embedding: id 7 at position 4 (index [1, 1]) is out of range for a table of V=7 rows"));
  CHECK_THROWS_WITH(ops::embedding(table, Tensor::from_ints({0, -1}, Shape{2})),
                    Contains("embedding: id -1 at position 1 is out of range for a table of V=7 rows"));
  CHECK_THROWS_WITH(ops::embedding(Tensor::zeros(Shape{7}), Tensor::from_ints({0}, Shape{1})),
                    Contains("embedding: table must be [V, C], got f32[7]"));
  CHECK_THROWS_WITH(ops::embedding(table, Tensor::zeros(Shape{2})), Contains("embedding: argument 'ids' must be i32"));
  CHECK_THROWS_WITH(ops::embedding(Tensor::zeros(Shape{2, 2}, Device::cpu, DType::i32), Tensor::from_ints({0}, Shape{1})),
                    Contains("embedding: argument 'table' must be f32"));
  CHECK_THROWS_WITH(ops::embedding(Tensor(), Tensor::from_ints({0}, Shape{1})), Contains("undefined tensor"));
}

TEST_CASE("gather_rows: rows of x by index, repeats allowed, and the gradient sums them in index order",
          "[ops][embedding][grad][ops_embed]") {
  // x [4, 2, 3] (rows of 6), index with a repeat and an untouched row.
  Tensor x = random_tensor(Shape{4, 2, 3}, 21, -1, 1, true);
  Tensor index = Tensor::from_ints({3, 0, 3, 1}, Shape{4});
  Tensor out = ops::gather_rows(x, index);
  CHECK(out.shape() == Shape{4, 2, 3});
  const std::vector<float> xv = x.to_vector(), ov = out.to_vector();
  const std::vector<int32_t> iv = index.to_int_vector();
  bool same = true;
  for (size_t r = 0; r < iv.size(); ++r)
    for (size_t c = 0; c < 6; ++c) same = same && ov[r * 6 + c] == xv[static_cast<size_t>(iv[r]) * 6 + c];
  CHECK(same);
  Tensor gy = random_tensor(Shape{4, 2, 3}, 22);
  out.backward(gy);
  std::vector<float> want(xv.size(), 0.0f);
  const std::vector<float> g = gy.to_vector();
  for (size_t r = 0; r < iv.size(); ++r)
    for (size_t c = 0; c < 6; ++c) want[static_cast<size_t>(iv[r]) * 6 + c] += g[r * 6 + c];
  CHECK(bitwise_equal(x.grad().to_vector(), want));  // row 2 untouched: zeros
  CHECK(ops::gather_rows(x, Tensor::from_ints({}, Shape{0})).shape() == Shape{0, 2, 3});

  Tensor x2 = random_tensor(Shape{5, 4}, 23, -1, 1, true);
  Tensor index2 = Tensor::from_ints({4, 4, 0, 2, 4, 1}, Shape{6});
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::gather_rows(in[0], index2); }, {x2}) == 0);
}

TEST_CASE("gather_rows: a bad index or shape names the op and what was expected", "[ops][embedding][errors][ops_embed]") {
  Tensor x = Tensor::zeros(Shape{3, 4});
  CHECK_THROWS_WITH(ops::gather_rows(x, Tensor::from_ints({0, 3}, Shape{2})),
                    Contains("gather_rows: index 3 at position 1 is out of range for x of 3 rows"));
  CHECK_THROWS_WITH(ops::gather_rows(x, Tensor::from_ints({0, 1}, Shape{1, 2})),
                    Contains("gather_rows: index must be i32 [M], got i32[1, 2]"));
  CHECK_THROWS_WITH(ops::gather_rows(Tensor::zeros(Shape{}), Tensor::from_ints({0}, Shape{1})),
                    Contains("gather_rows: x must have a row axis"));
  CHECK_THROWS_WITH(ops::gather_rows(x, Tensor::zeros(Shape{1})), Contains("gather_rows: argument 'index' must be i32"));
}

TEST_CASE("embedding: bitwise identical with 1 and 2 threads", "[ops][embedding][determinism][ops_embed]") {
  const int64_t vocab = 3001, dim = 64, n = 10007;
  Tensor table = random_tensor(Shape{vocab, dim}, 7);
  Tensor ids = random_ids(Shape{n}, 8, 97);  // heavy repeats
  Tensor gy = random_tensor(Shape{n, dim}, 9);
  auto [one, two] = with_1_and_2_threads([&] {
    Tensor t = table.clone();
    t.set_requires_grad(true);
    Tensor out = ops::embedding(t, ids);
    out.backward(gy);
    return std::make_pair(out.to_vector(), t.grad().to_vector());
  });
  CHECK(bitwise_equal(one.first, two.first));
  CHECK(bitwise_equal(one.second, two.second));
}

TEST_CASE("embedding: every backend agrees with the CPU", "[ops][embedding][backends][ops_embed]") {
  Tensor table = random_tensor(Shape{29, 13}, 10, -1, 1, true);
  Tensor ids = random_ids(Shape{3, 7}, 11, 29);
  check_backends("embedding", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::embedding(in[0], in[1])};
  }, {table, ids}, 1e-6);
}

// ---- rope -----------------------------------------------------------------------------------------

TEST_CASE("rope: matches Hugging Face apply_rotary_pos_emb (double reference, 2e-6 abs)", "[ops][rope][ops_embed]") {
  struct Case { int64_t b, t, h, d; double theta; };
  for (Case c : {Case{1, 1, 1, 2, 10000.0}, Case{2, 5, 3, 8, 10000.0}, Case{1, 7, 2, 18, 500000.0},
                 Case{3, 3, 1, 64, 10000.0}, Case{1, 13, 5, 34, 1000.0}}) {
    INFO("B=" << c.b << " T=" << c.t << " H=" << c.h << " D=" << c.d << " theta=" << c.theta);
    Tensor x = random_tensor(Shape{c.b, c.t, c.h, c.d}, 20 + c.d, -1, 1);
    std::vector<int32_t> pos(static_cast<size_t>(c.b * c.t));
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>((i * 977) % 4099);  // 0 .. 4098, unordered
    Tensor positions = Tensor::from_ints(pos, Shape{c.b, c.t});
    std::vector<float> want = hf_rope(x.to_vector(), pos, c.b * c.t, c.h, c.d, c.theta);
    CHECK(max_abs_diff(ops::rope(x, positions, static_cast<float>(c.theta)).to_vector(), want) < 2e-6);
  }
  // Position 0 is the identity; a hand-computed case at D = 2, where theta^0 = 1 makes the angle = pos.
  Tensor x = random_tensor(Shape{1, 2, 2, 6}, 30);
  Tensor zero = Tensor::from_ints({0, 0}, Shape{1, 2});
  CHECK(ops::rope(x, zero).to_vector() == x.to_vector());
  Tensor y = ops::rope(Tensor::from_vector({1, 2}, Shape{1, 1, 1, 2}), Tensor::from_ints({1}, Shape{1, 1}), 1.0f);
  const double c1 = std::cos(1.0), s1 = std::sin(1.0);
  CHECK(max_abs_diff(y.to_vector(), {static_cast<float>(1 * c1 - 2 * s1), static_cast<float>(2 * c1 + 1 * s1)}) < 1e-6);
}

TEST_CASE("rope: gradient is the inverse rotation (gradcheck 2e-3 abs + 2e-2 rel, h = 1e-2)", "[ops][rope][grad][ops_embed]") {
  Tensor x = random_tensor(Shape{2, 3, 3, 10}, 31, -1, 1, true);
  Tensor positions = Tensor::from_ints({0, 1, 7, 100, 4095, 3}, Shape{2, 3});
  CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::rope(in[0], positions); }, {x}) == 0);
  // Backward of a rotation = rotation by the negative position.
  Tensor gy = random_tensor(Shape{2, 3, 3, 10}, 32);
  x.zero_grad();
  ops::rope(x, positions).backward(gy);
  Tensor neg = Tensor::from_ints({0, -1, -7, -100, -4095, -3}, Shape{2, 3});
  CHECK(max_abs_diff(x.grad().to_vector(), ops::rope(gy, neg).to_vector()) < 1e-7);
}

TEST_CASE("rope: bad shapes and arguments are reported", "[ops][rope][errors][ops_embed]") {
  Tensor pos = Tensor::from_ints({0, 1, 2}, Shape{1, 3});
  CHECK_THROWS_WITH(ops::rope(Tensor::zeros(Shape{1, 3, 2, 5}), pos),
                    Contains("rope: head dim D must be even to split into pairs (d, d + D/2), got D=5 in x [1, 3, 2, 5]"));
  CHECK_THROWS_WITH(ops::rope(Tensor::zeros(Shape{1, 3, 2, 4}), Tensor::from_ints({0, 1, 2}, Shape{3})),
                    Contains("rope: positions must be [B, T] = [1, 3] to match x [1, 3, 2, 4], got i32[3]"));
  CHECK_THROWS_WITH(ops::rope(Tensor::zeros(Shape{3, 2, 4}), pos), Contains("rope: x must be [B, T, H, D], got f32[3, 2, 4]"));
  CHECK_THROWS_WITH(ops::rope(Tensor::zeros(Shape{1, 3, 2, 4}), Tensor::zeros(Shape{1, 3})),
                    Contains("rope: argument 'positions' must be i32"));
  CHECK_THROWS_WITH(ops::rope(Tensor::zeros(Shape{1, 3, 2, 4}), pos, 0.0f), Contains("rope: theta must be a positive"));
}

TEST_CASE("rope: bitwise identical with 1 and 2 threads", "[ops][rope][determinism][ops_embed]") {
  Tensor x = random_tensor(Shape{3, 67, 5, 64}, 33);
  std::vector<int32_t> p(3 * 67);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int32_t>(i * 13);
  Tensor positions = Tensor::from_ints(p, Shape{3, 67});
  Tensor gy = random_tensor(Shape{3, 67, 5, 64}, 34);
  auto [one, two] = with_1_and_2_threads([&] {
    Tensor xi = x.clone();
    xi.set_requires_grad(true);
    Tensor out = ops::rope(xi, positions);
    out.backward(gy);
    return std::make_pair(out.to_vector(), xi.grad().to_vector());
  });
  CHECK(bitwise_equal(one.first, two.first));
  CHECK(bitwise_equal(one.second, two.second));
}

TEST_CASE("rope: every backend agrees with the CPU", "[ops][rope][backends][ops_embed]") {
  Tensor x = random_tensor(Shape{2, 5, 3, 16}, 35, -1, 1, true);
  Tensor positions = Tensor::from_ints({0, 1, 2, 3, 4, 100, 200, 300, 2047, 4095}, Shape{2, 5});
  check_backends("rope", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{ops::rope(in[0], in[1], 10000.0f)};
  }, {x, positions}, 1e-5);
}

namespace {
// Hugging Face's rope_scaling rules written out independently of runtime/rope_frequencies.h: "linear"
// divides every inv_freq by the factor; "llama3" (_compute_llama3_parameters) keeps wavelengths below
// original/high_freq_factor, divides those above original/low_freq_factor, and blends in between.
std::vector<float> hf_scaled_rope(const std::vector<float>& x, const std::vector<int32_t>& pos, int64_t bt,
                                  int64_t h, int64_t d, double theta, const RopeFrequencies& f) {
  std::vector<float> out(x.size());
  const int64_t half = d / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const double base = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(d));
    double v = base;
    if (f.scaling == RopeScaling::linear) v = base / f.factor;
    if (f.scaling == RopeScaling::llama3) {
      const double wavelen = 2 * M_PI / base;
      const double low_wl = f.original_max_position / f.low_freq_factor;
      const double high_wl = f.original_max_position / f.high_freq_factor;
      const double divided = wavelen > low_wl ? base / f.factor : base;
      const double smooth = (f.original_max_position / wavelen - f.low_freq_factor) /
                            (f.high_freq_factor - f.low_freq_factor);
      const bool medium = !(wavelen < high_wl) && !(wavelen > low_wl);
      v = medium ? (1 - smooth) * divided / f.factor + smooth * divided : divided;
    }
    inv[static_cast<size_t>(i)] = v;
  }
  for (int64_t r = 0; r < bt; ++r)
    for (int64_t hh = 0; hh < h; ++hh) {
      const float* xi = &x[static_cast<size_t>((r * h + hh) * d)];
      for (int64_t j = 0; j < d; ++j) {
        const double emb = pos[static_cast<size_t>(r)] * inv[static_cast<size_t>(j % half)];
        const double rotated = j < half ? -static_cast<double>(xi[j + half]) : static_cast<double>(xi[j - half]);
        out[static_cast<size_t>((r * h + hh) * d + j)] =
            static_cast<float>(xi[j] * std::cos(emb) + rotated * std::sin(emb));
      }
    }
  return out;
}

RopeFrequencies scaled(RopeScaling kind, float theta, double factor) {
  RopeFrequencies f(theta);
  f.scaling = kind;
  f.factor = factor;
  f.low_freq_factor = 1.0;
  f.high_freq_factor = 4.0;
  f.original_max_position = 64.0;  // small, so a head of 32 has kept, blended and divided frequencies
  return f;
}
}  // namespace

TEST_CASE("rope: linear and llama3 scaling match Hugging Face's frequency rules (2e-6 abs)",
          "[ops][rope][ops_embed]") {
  const int64_t B = 2, T = 9, H = 2, D = 32;
  Tensor x = random_tensor(Shape{B, T, H, D}, 40, -1, 1);
  std::vector<int32_t> pos(static_cast<size_t>(B * T));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>((i * 331) % 2000);
  Tensor positions = Tensor::from_ints(pos, Shape{B, T});
  for (RopeScaling kind : {RopeScaling::linear, RopeScaling::llama3}) {
    const RopeFrequencies f = scaled(kind, 10000.0f, 8.0);
    INFO("scaling " << static_cast<int>(kind));
    const std::vector<float> got = ops::rope(x, positions, f).to_vector();
    CHECK(max_abs_diff(got, hf_scaled_rope(x.to_vector(), pos, B * T, H, D, 10000.0, f)) < 2e-6);
    // Scaling really changes the result (no silent fallback to the unscaled rotation).
    CHECK(max_abs_diff(got, ops::rope(x, positions, 10000.0f).to_vector()) > 1e-2);
  }
  // Linear scaling by f is the unscaled rotation at position / f.
  Tensor even = Tensor::from_ints({0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68}, Shape{B, T});
  Tensor quarter = Tensor::from_ints({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}, Shape{B, T});
  CHECK(max_abs_diff(ops::rope(x, even, scaled(RopeScaling::linear, 10000.0f, 4.0)).to_vector(),
                     ops::rope(x, quarter, 10000.0f).to_vector()) < 1e-6);
  CHECK_THROWS_WITH(ops::rope(x, positions, scaled(RopeScaling::linear, 10000.0f, 0.0)),
                    Contains("rope: the scaling factor must be a positive finite number"));
}

TEST_CASE("rope: scaled gradient is the inverse rotation (gradcheck 2e-3 abs + 2e-2 rel, h = 1e-2)",
          "[ops][rope][grad][ops_embed]") {
  Tensor x = random_tensor(Shape{2, 3, 2, 16}, 41, -1, 1, true);
  Tensor positions = Tensor::from_ints({0, 1, 7, 100, 4095, 3}, Shape{2, 3});
  for (RopeScaling kind : {RopeScaling::linear, RopeScaling::llama3}) {
    const RopeFrequencies f = scaled(kind, 500.0f, 4.0);
    CHECK(gradcheck([&](const std::vector<Tensor>& in) { return ops::rope(in[0], positions, f); }, {x}) == 0);
  }
}
