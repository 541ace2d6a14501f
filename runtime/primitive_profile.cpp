// Backend's per-primitive timing with the host clock (a device overrides the clock, not the totals).
#include "runtime/primitive_profile.h"

#include <algorithm>

namespace gtpo {

void Backend::set_profiling(bool on) {
  if (profiling_) flush_timings();  // a device's pending timings, dropped with the totals below
  profiling_ = on;
  profile_totals_.clear();
}

std::vector<PrimitiveTime> Backend::profile() {
  flush_timings();
  std::vector<PrimitiveTime> out;
  for (const auto& [name, time] : profile_totals_) out.push_back(time);
  std::stable_sort(out.begin(), out.end(),
                   [](const PrimitiveTime& a, const PrimitiveTime& b) { return a.seconds > b.seconds; });
  return out;
}

void Backend::start_timing(const char* name) {
  timing_name_ = name;
  timing_start_ = std::chrono::steady_clock::now();
}

void Backend::stop_timing() {
  add_timing(timing_name_,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - timing_start_).count());
}

void Backend::add_timing(const char* name, double seconds) {
  PrimitiveTime& t = profile_totals_[name];
  if (t.name.empty()) t.name = name;
  t.calls += 1;
  t.seconds += seconds;
}

}  // namespace gtpo
