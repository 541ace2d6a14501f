#include "runtime/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/error.h"

namespace gtpo::optim {

const char* lr_schedule_kind_name(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::constant: return "constant";
    case LrScheduleKind::constant_with_warmup: return "constant_with_warmup";
    case LrScheduleKind::cosine: return "cosine";
  }
  return "?";
}

LrSchedule::LrSchedule(LrScheduleOptions o) : options_(o) {
  GTPO_CHECK(std::isfinite(o.base_lr) && o.base_lr >= 0.0f, "lr schedule: base_lr must be finite and >= 0, got ",
             o.base_lr);
  GTPO_CHECK(o.warmup_steps >= 0, "lr schedule: warmup_steps must be >= 0, got ", o.warmup_steps);
  // A silently ignored warm-up would be a surprise in a config: say which kind does warm-up.
  GTPO_CHECK(o.kind != LrScheduleKind::constant || o.warmup_steps == 0, "lr schedule: kind 'constant' takes no ",
             "warmup_steps (got ", o.warmup_steps, "); use 'constant_with_warmup'");
  if (o.kind == LrScheduleKind::cosine) {
    GTPO_CHECK(o.total_steps > o.warmup_steps, "lr schedule: cosine needs total_steps > warmup_steps, got ",
               "total_steps=", o.total_steps, " warmup_steps=", o.warmup_steps);
    GTPO_CHECK(o.min_lr_ratio >= 0.0f && o.min_lr_ratio <= 1.0f, "lr schedule: min_lr_ratio must be in [0, 1], got ",
               o.min_lr_ratio);
  }
}

float LrSchedule::lr_at(int64_t step) const {
  GTPO_CHECK(step >= 0, "lr schedule: step must be >= 0, got ", step);
  const LrScheduleOptions& o = options_;
  const double base = o.base_lr;
  if (step < o.warmup_steps)
    return static_cast<float>(base * static_cast<double>(step + 1) / static_cast<double>(o.warmup_steps));
  switch (o.kind) {
    case LrScheduleKind::constant:
    case LrScheduleKind::constant_with_warmup: return o.base_lr;
    case LrScheduleKind::cosine: {
      const double progress = std::min(1.0, static_cast<double>(step - o.warmup_steps) /
                                                static_cast<double>(o.total_steps - o.warmup_steps));
      const double min_lr = base * o.min_lr_ratio;
      return static_cast<float>(min_lr + (base - min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress)));
    }
  }
  return o.base_lr;
}

}  // namespace gtpo::optim
