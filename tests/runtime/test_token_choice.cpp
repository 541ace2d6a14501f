// The token choice (runtime/token_choice.h) on the CPU against a scalar reference written from the
// definition in long double, its distribution against the probabilities, its edge cases and errors. The
// CUDA kernel is held to the CPU's ids bit for bit by tests/cuda_emulated (and on a GPU by tests/cuda).
#include <omp.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "runtime/ops.h"
#include "runtime/random.h"
#include "runtime/token_choice.h"

using namespace gtpo;

namespace {

constexpr int64_t kLanes = token_choice::kTokenChoiceLanes;
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<int32_t> choose(const std::vector<float>& logits, int64_t vocab, const TokenChoiceArgs& a,
                            const std::vector<double>& u) {
  const int64_t rows = static_cast<int64_t>(logits.size()) / vocab;
  return ops::choose_tokens(Tensor::from_vector(logits, {rows, vocab}), u, a).to_int_vector();
}

int32_t choose_one(const std::vector<float>& logits, float temperature, int64_t top_k, float top_p, double u,
                   int64_t choice_ids = 0) {
  const int64_t V = static_cast<int64_t>(logits.size());
  return choose(logits, V, {temperature, top_k, top_p, choice_ids > 0 ? choice_ids : V}, {u})[0];
}

// The definition, written plainly: weights in long double, the kept set from the values sorted, the draw
// by the inverse CDF over the kept ids in lane order. Returns -1 where u or the top-p cut lies within
// `margin` (relative) of a boundary, where float weights may legitimately round the other way.
int32_t reference(const float* x, int64_t n, const TokenChoiceArgs& a, double u, long double margin) {
  const float inv_t = 1.0f / a.temperature;
  std::vector<float> z(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) z[k] = x[k] * inv_t;
  const float m = *std::max_element(z.begin(), z.end());
  std::vector<long double> w(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) w[k] = std::exp(static_cast<long double>(z[k]) - m);
  std::vector<float> sorted = z;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  float cut = sorted.back();
  if (a.top_k > 0 && a.top_k < n) cut = sorted[static_cast<size_t>(a.top_k - 1)];  // ties at the cut are kept
  if (a.top_p < 1.0f) {
    long double total = 0;
    for (int64_t k = 0; k < n; ++k) total += z[k] >= cut ? w[k] : 0;
    long double running = 0;
    for (size_t i = 0; i < sorted.size() && sorted[i] >= cut; ++i) {
      if (i > 0 && sorted[i] == sorted[i - 1]) continue;  // one step per distinct value
      for (int64_t k = 0; k < n; ++k) running += z[k] == sorted[i] ? w[k] : 0;
      const long double need = static_cast<long double>(a.top_p) * total;
      if (std::abs(running - need) < margin * total) return -1;
      if (running >= need) {
        cut = sorted[i];
        break;
      }
    }
  }
  long double total = 0;
  for (int64_t k = 0; k < n; ++k) total += z[k] >= cut ? w[k] : 0;
  const long double target = u * total;
  long double running = 0;
  for (int64_t lane = 0; lane < kLanes; ++lane)
    for (int64_t k = lane; k < n; k += kLanes) {
      if (z[k] < cut) continue;
      running += w[k];
      if (std::abs(running - target) < margin * total) return -1;
      if (target < running) return static_cast<int32_t>(k);
    }
  return -1;
}

}  // namespace

TEST_CASE("token choice: the CPU gives the reference's ids over random rows, u and settings",
          "[runtime][token_choice]") {
  std::mt19937 rng(31);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  const TokenChoiceArgs settings[] = {{1.0f, 0, 1.0f, 0}, {0.7f, 0, 1.0f, 0},  {1.3f, 5, 1.0f, 0},
                                      {1.0f, 0, 0.9f, 0}, {0.8f, 40, 0.5f, 0}, {2.0f, 1, 1.0f, 0}};
  int64_t compared = 0, skipped = 0;
  for (int64_t n : {5, 300, 1000, 4099}) {
    for (TokenChoiceArgs a : settings) {
      a.choice_ids = n;
      const int64_t rows = 24;
      std::vector<float> x(static_cast<size_t>(rows * n));
      for (float& v : x) v = logit(rng);
      std::vector<double> u(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) u[r] = counter_uniform(5, static_cast<uint64_t>(n), r);
      const std::vector<int32_t> ids = choose(x, n, a, u);
      for (int64_t r = 0; r < rows; ++r) {
        const int32_t want = reference(x.data() + r * n, n, a, u[r], 1e-5L);
        if (want < 0) {
          ++skipped;
          continue;
        }
        INFO("n " << n << " T " << a.temperature << " top_k " << a.top_k << " top_p " << a.top_p << " row "
                  << r);
        CHECK(ids[r] == want);
        ++compared;
      }
    }
  }
  CHECK(compared >= 560);  // of 576: the margins skip only a few
  CHECK(compared + skipped == 576);
}

TEST_CASE("token choice: draws follow the kept distribution", "[runtime][token_choice]") {
  const std::vector<float> logits = {0.5f, -1.0f, 2.0f, 0.0f, 1.0f, -3.0f, 1.5f, 0.25f};
  const int64_t V = 8, draws = 40000;
  for (const TokenChoiceArgs a : {TokenChoiceArgs{1.0f, 0, 1.0f, V}, TokenChoiceArgs{0.5f, 3, 1.0f, V},
                                  TokenChoiceArgs{1.0f, 0, 0.8f, V}}) {
    INFO("T " << a.temperature << " top_k " << a.top_k << " top_p " << a.top_p);
    std::vector<float> x;
    std::vector<double> u;
    for (int64_t i = 0; i < draws; ++i) {
      x.insert(x.end(), logits.begin(), logits.end());
      u.push_back(counter_uniform(11, static_cast<uint64_t>(i)));
    }
    const std::vector<int32_t> ids = choose(x, V, a, u);
    // The kept set by hand: top-3 of the logits is {2, 6, 4}; top-p 0.8 keeps {2, 6, 4, 0} (0.80 of the
    // mass).
    std::vector<bool> kept(V, true);
    if (a.top_k == 3) kept = {false, false, true, false, true, false, true, false};
    if (a.top_p < 1.0f) kept = {true, false, true, false, true, false, true, false};
    std::vector<double> p(V, 0.0);
    double total = 0;
    for (int64_t k = 0; k < V; ++k) total += p[k] = kept[k] ? std::exp(logits[k] / a.temperature) : 0.0;
    std::vector<int64_t> count(V, 0);
    for (int32_t id : ids) ++count[id];
    for (int64_t k = 0; k < V; ++k) {
      const double q = p[k] / total, f = static_cast<double>(count[k]) / draws;
      INFO("id " << k << " p " << q << " frequency " << f);
      CHECK(std::abs(f - q) <= 5.0 * std::sqrt(q * (1 - q) / draws) + 1e-12);
      if (!kept[k]) CHECK(count[k] == 0);
    }
  }
}

TEST_CASE("token choice: greedy, ties, top-k and top-p cuts, choice_ids", "[runtime][token_choice]") {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.0f, -1.0f};
  for (int i = 0; i < 200; ++i) {
    const double u = (i + 0.5) / 200.0;
    const int32_t k2 = choose_one(logits, 1.0f, 2, 1.0f, u);
    CHECK((k2 == 1 || k2 == 3));
    CHECK(choose_one(logits, 1.0f, 0, 0.01f, u) == 1);
  }
  CHECK(choose_one(logits, 0.0f, 0, 1.0f, 0.3) == 1);
  // u spanning [0, 1) reaches every token of the full distribution, in lane (here id) order.
  CHECK(choose_one(logits, 1.0f, 0, 1.0f, 0.0) == 0);
  CHECK(choose_one(logits, 1.0f, 0, 1.0f, 0.999999) == 4);
  // Greedy takes the lowest id of tied maxima; top-k keeps every id tied at its cut.
  CHECK(choose_one({1.0f, 4.0f, 2.0f, 4.0f}, 0.0f, 0, 1.0f, 0.5) == 1);
  std::vector<bool> seen(4, false);
  for (int i = 0; i < 300; ++i)
    seen[choose_one({1.0f, 1.0f, 1.0f, 0.0f}, 1.0f, 1, 1.0f, (i + 0.5) / 300)] = true;
  CHECK(seen == std::vector<bool>{true, true, true, false});
  // Only ids [0, choice_ids) are drawn; id 4, the most probable, lies past the limit.
  const std::vector<float> past = {0.0f, 3.0f, 1.0f, 2.0f, 9.0f};
  CHECK(choose_one(past, 0.0f, 0, 1.0f, 0.5, 4) == 1);
  CHECK(choose_one(past, 1.0f, 0, 1.0f, 0.999999, 4) == 3);
  // Ids in lane order: with more ids than lanes, lane 0 holds 0, 256, 512 before lane 1's 1, 257, ...
  std::vector<float> wide(600, -100.0f);
  wide[1] = wide[256] = 0.0f;  // two equal weights: id 256 (lane 0) comes first in the CDF
  CHECK(choose_one(wide, 1.0f, 0, 1.0f, 0.25) == 256);
  CHECK(choose_one(wide, 1.0f, 0, 1.0f, 0.75) == 1);
}

TEST_CASE("token choice: NaN and infinite logits", "[runtime][token_choice]") {
  for (double u : {0.0, 0.5, 0.999}) {
    CHECK(choose_one({kNaN, 1.0f, kNaN, 0.5f}, 1.0f, 0, 1.0f, u) != 0);    // NaN is never drawn
    CHECK(choose_one({kNaN, 1.0f, kNaN, 0.5f}, 0.0f, 0, 1.0f, u) == 1);    // nor taken greedily
    CHECK(choose_one({-kInf, 1.0f, -kInf, 0.5f}, 1.0f, 1, 0.5f, u) == 1);  // -inf has no weight
    CHECK(choose_one({-kInf, -kInf, -kInf}, 1.0f, 0, 1.0f, u) == 0);       // nothing weighs: the lowest id
    CHECK(choose_one({0.0f, kInf, 2.0f, kInf}, 1.0f, 0, 1.0f, u) == 1);    // the first +inf
    CHECK(choose_one({kNaN, kNaN}, 1.0f, 0, 0.5f, u) == 0);
  }
}

TEST_CASE("token choice: the ids do not depend on the thread count", "[runtime][token_choice][determinism]") {
  std::mt19937 rng(4);
  std::normal_distribution<float> logit(0.0f, 2.0f);
  const int64_t rows = 64, V = 3000;
  std::vector<float> x(static_cast<size_t>(rows * V));
  for (float& v : x) v = logit(rng);
  std::vector<double> u(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) u[r] = counter_uniform(9, r);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<int32_t>> runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    runs.push_back(choose(x, V, {0.9f, 50, 0.95f, V}, u));
  }
  omp_set_num_threads(saved);
  CHECK(runs[0] == runs[1]);
  CHECK(runs[0] == runs[2]);
}

TEST_CASE("token choice: bad arguments are errors", "[runtime][token_choice][errors]") {
  const Tensor x = Tensor::from_vector({0.0f, 1.0f, 2.0f, 3.0f}, {2, 2});
  CHECK_THROWS_WITH(ops::choose_tokens(x, {0.1, 0.2}, {1.0f, 0, 1.0f, 3}),
                    Catch::Contains("choice_ids must be in [1, 2]"));
  CHECK_THROWS_WITH(ops::choose_tokens(x, {0.1}, {1.0f, 0, 1.0f, 2}),
                    Catch::Contains("1 uniforms for 2 rows"));
  CHECK_THROWS_WITH(ops::choose_tokens(x, {0.1, 1.0}, {1.0f, 0, 1.0f, 2}),
                    Catch::Contains("uniform 1 of row 1 is outside [0, 1)"));
  CHECK_THROWS_WITH(ops::choose_tokens(x, {0.1, 0.2}, {1.0f, 0, 0.0f, 2}),
                    Catch::Contains("top_p must be in (0, 1]"));
  CHECK_THROWS_WITH(ops::choose_tokens(x, {0.1, 0.2}, {-1.0f, 0, 1.0f, 2}), Catch::Contains("temperature"));
  CHECK_THROWS_WITH(ops::choose_tokens(x.view({4}), {0.1}, {1.0f, 0, 1.0f, 2}),
                    Catch::Contains("[rows, vocab]"));
  CHECK(ops::choose_tokens(x, {}, {0.0f, 0, 1.0f, 2}).to_int_vector() == std::vector<int32_t>{1, 1});
}
