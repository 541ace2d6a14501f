// pass@k (Chen et al. 2021) and mean@k.
#include <catch2/catch.hpp>

#include "rl/math/pass_at_k.h"
#include "runtime/error.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;

namespace {
// C(n, k) as a double, for checking the product form on small n.
double binomial(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0.0;
  double r = 1.0;
  for (int64_t i = 1; i <= k; ++i) r = r * static_cast<double>(n - k + i) / static_cast<double>(i);
  return r;
}
}  // namespace

TEST_CASE("pass@k matches hand-computed values", "[pass_at_k]") {
  CHECK(pass_at_k(5, 2, 2) == Approx(0.7));      // 1 - C(3,2)/C(5,2) = 1 - 3/10
  CHECK(pass_at_k(10, 3, 1) == Approx(0.3));     // pass@1 = c/n
  CHECK(pass_at_k(4, 1, 2) == Approx(0.5));      // 1 - C(3,2)/C(4,2) = 1 - 3/6
  CHECK(pass_at_k(200, 1, 100) == Approx(0.5));  // 1 - C(199,100)/C(200,100) = 1 - 100/200
  CHECK(pass_at_k(4, 1, 4) == 1.0);              // only 3 wrong samples: any 4 contain the correct one
}

TEST_CASE("pass@k equals the binomial formula on small n", "[pass_at_k]") {
  for (int64_t n = 1; n <= 12; ++n)
    for (int64_t c = 0; c <= n; ++c)
      for (int64_t k = 1; k <= n; ++k) {
        INFO("n=" << n << " c=" << c << " k=" << k);
        CHECK(pass_at_k(n, c, k) == Approx(1.0 - binomial(n - c, k) / binomial(n, k)).margin(1e-12));
      }
}

TEST_CASE("pass@k edge cases: no correct, all correct, k > n", "[pass_at_k]") {
  CHECK(pass_at_k(16, 0, 1) == 0.0);
  CHECK(pass_at_k(16, 0, 16) == 0.0);
  CHECK(pass_at_k(16, 16, 1) == 1.0);
  CHECK(pass_at_k(16, 16, 16) == 1.0);
  CHECK_THROWS_WITH(pass_at_k(4, 1, 5), Contains("k = 5") && Contains("n = 4"));
  CHECK_THROWS_WITH(pass_at_k(4, 1, 0), Contains("k = 0"));
  CHECK_THROWS_WITH(pass_at_k(4, 5, 1), Contains("c = 5"));
  CHECK_THROWS_WITH(pass_at_k(0, 0, 1), Contains("n = 0"));
  // Large n stays finite and monotone in k.
  double last = 0.0;
  for (int64_t k : pass_at_k_ks(1024)) {
    const double p = pass_at_k(1024, 3, k);
    CHECK(p >= last);
    CHECK(p <= 1.0);
    last = p;
  }
}

TEST_CASE("mean@k is c/n with the same checks", "[pass_at_k]") {
  CHECK(mean_at_k(8, 2, 1) == 0.25);
  CHECK(mean_at_k(8, 2, 8) == 0.25);
  CHECK(mean_at_k(8, 0, 4) == 0.0);
  CHECK(mean_at_k(8, 8, 4) == 1.0);
  CHECK_THROWS_WITH(mean_at_k(4, 1, 8), Contains("k = 8"));
}

TEST_CASE("the reported ks are powers of two up to K, and K", "[pass_at_k]") {
  CHECK(pass_at_k_ks(1) == std::vector<int64_t>{1});
  CHECK(pass_at_k_ks(4) == std::vector<int64_t>{1, 2, 4});
  CHECK(pass_at_k_ks(6) == std::vector<int64_t>{1, 2, 4, 6});
  CHECK_THROWS_WITH(pass_at_k_ks(0), Contains(">= 1"));
  CHECK(mean_pass_at_k({0, 2, 4}, 4, 1) == Approx(0.5));
  CHECK(mean_pass_at_k({}, 4, 1) == 0.0);
}
