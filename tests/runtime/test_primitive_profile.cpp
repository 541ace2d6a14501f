// Per-primitive timing (Backend::set_profiling): off by default, counts each primitive call once under its
// name while on, nested primitives as the outer one, and starts from empty totals when switched on.
#include <catch2/catch.hpp>

#include "runtime/backend.h"
#include "runtime/ops.h"

using namespace gtpo;

namespace {
int64_t calls_of(const std::vector<PrimitiveTime>& profile, const std::string& name) {
  for (const PrimitiveTime& t : profile)
    if (t.name == name) return t.calls;
  return 0;
}
}  // namespace

TEST_CASE("profile: primitives are timed only while profiling, each call once", "[runtime][profile]") {
  Backend& cpu = backend_for(Device::cpu);
  const Tensor a = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}),
               b = Tensor::from_vector({1, 0, 0, 1, 1, 1}, {3, 2});
  REQUIRE_FALSE(cpu.profiling());
  ops::matmul(a, b);
  CHECK(cpu.profile().empty());

  cpu.set_profiling(true);
  for (int i = 0; i < 3; ++i) ops::softmax(ops::matmul(a, b));
  const std::vector<PrimitiveTime> p = cpu.profile();
  CHECK(calls_of(p, "gemm") == 3);
  CHECK(calls_of(p, "softmax_forward") == 3);
  for (size_t i = 0; i < p.size(); ++i) {
    CHECK(p[i].seconds >= 0.0);
    if (i > 0) CHECK(p[i - 1].seconds >= p[i].seconds);  // largest first
  }
  // A primitive inside another counts as the outer one only.
  cpu.profile_begin("outer");
  cpu.profile_begin("inner");
  cpu.profile_end();
  cpu.profile_end();
  CHECK(calls_of(cpu.profile(), "outer") == 1);
  CHECK(calls_of(cpu.profile(), "inner") == 0);

  cpu.set_profiling(true);  // again: empty totals
  CHECK(cpu.profile().empty());
  cpu.set_profiling(false);
  ops::matmul(a, b);
  CHECK(cpu.profile().empty());
}
