// Backend's per-primitive timing with the host clock (a device overrides the clock, not the totals).
#include "runtime/primitive_profile.h"

#include <algorithm>
#include <chrono>
#include <map>

namespace gtpo {

struct Backend::Profile {
  int depth = 0;  // nested primitive calls; only the outermost is timed
  const char* timing_name = nullptr;
  std::chrono::steady_clock::time_point timing_start;
  std::map<std::string, PrimitiveTime> totals;
};

Backend::Backend() = default;
Backend::~Backend() = default;

void Backend::set_profiling(bool on) {
  if (profile_) flush_timings();  // a device's pending timings, dropped with the totals below
  profile_ = on ? std::make_unique<Profile>() : nullptr;
}

std::vector<PrimitiveTime> Backend::profile() {
  if (!profile_) return {};
  flush_timings();
  std::vector<PrimitiveTime> out;
  for (const auto& [name, time] : profile_->totals) out.push_back(time);
  std::stable_sort(out.begin(), out.end(),
                   [](const PrimitiveTime& a, const PrimitiveTime& b) { return a.seconds > b.seconds; });
  return out;
}

void Backend::profile_begin(const char* name) {
  if (profile_->depth++ == 0) start_timing(name);
}

void Backend::profile_end() {
  if (--profile_->depth == 0) stop_timing();
}

void Backend::start_timing(const char* name) {
  profile_->timing_name = name;
  profile_->timing_start = std::chrono::steady_clock::now();
}

void Backend::stop_timing() {
  add_timing(
      profile_->timing_name,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - profile_->timing_start).count());
}

void Backend::add_timing(const char* name, double seconds) {
  PrimitiveTime& t = profile_->totals[name];
  if (t.name.empty()) t.name = name;
  t.calls += 1;
  t.seconds += seconds;
}

}  // namespace gtpo
