// Learning-rate schedules: the LR to use for each optimiser step.
//
// Steps are 0-based: lr_at(0) is the LR of the first update. Warm-up is linear and reaches the base LR
// at its last step, lr_at(s) = base * (s + 1) / warmup_steps for s < warmup_steps, so the very first
// update already moves the weights (HF's s / warmup wastes step 0 on a zero LR).
#pragma once
#include <cstdint>
#include <string>

namespace gtpo::optim {

enum class LrScheduleKind {
  constant,              // base LR at every step; no warm-up allowed (use constant_with_warmup)
  constant_with_warmup,  // linear warm-up, then base LR
  cosine,                // linear warm-up, then half a cosine from base LR down to base * min_lr_ratio at
                         // total_steps; min LR after that
};

// Names as HF transformers spells them: "constant", "constant_with_warmup", "cosine" (the config reads
// them through rl::schedule_codec).
const char* lr_schedule_kind_name(LrScheduleKind kind);

struct LrScheduleOptions {
  LrScheduleKind kind = LrScheduleKind::constant;
  float base_lr = 1e-3f;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;    // cosine only: the step where the decay reaches its minimum
  float min_lr_ratio = 0.0f;  // cosine only: floor as a fraction of base_lr, in [0, 1]
};

class LrSchedule {
 public:
  // Validates the options (throws gtpo::Error naming the bad field).
  explicit LrSchedule(LrScheduleOptions options);
  float lr_at(int64_t step) const;
  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
};

}  // namespace gtpo::optim
