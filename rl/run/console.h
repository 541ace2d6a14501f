// What a training run says on the console: the per-step line (only the columns that can be non-zero under
// the config), an in-place progress line when stderr is a terminal, and warnings for the silent failures
// of RL runs (nothing to learn from, everything truncated, no gradient, everything clipped, entropy gone).
// Formatting only: the numbers come from the step's metrics.jsonl line.
#pragma once
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rl/run_config.h"
#include "rl/sft.h"

namespace gtpo::rl {

struct RlStepResult;

// Which optional columns a config can make non-zero.
struct ConsoleColumns {
  bool kept = false;       // dynamic sampling drops groups
  bool policy_kl = false;  // more than one optimiser step per batch: π_θ moves away from π_old within a step
  bool clip = false;       // same condition: the ratio is 1 (up to round-off) on the first update of a batch
  bool kl_ref = false;     // rl.kl_coef != 0
};
ConsoleColumns console_columns(const RunConfig& config);

// The full line of one step (a metrics.jsonl line); missing keys are left out rather than printed as 0.
std::string format_step_line(const nlohmann::json& metrics, int64_t total_steps,
                             const ConsoleColumns& columns);
// The short in-place line: step, ETA and the numbers that matter.
std::string format_progress_line(const nlohmann::json& metrics, int64_t total_steps, double eta_seconds);
// "42s", "3m05s", "1h02m".
std::string format_duration(double seconds);

// A warm-start step, as gtpo train's SFT phase and gtpo sft print and log it: the console line (printed at
// step 1, every 10th and the last: sft_line_due) and the sft.jsonl line (docs/metrics.md).
bool sft_line_due(const SftStep& step, int64_t total_steps);
std::string format_sft_line(const SftStep& step, int64_t total_steps);
nlohmann::json sft_step_json(const SftStep& step);

// The facts of one step the health checks read.
struct StepHealth {
  int64_t step = 0;
  int64_t groups = 0;              // groups that went into the advantage math
  int64_t informative_groups = 0;  // of those, groups whose responses do not all share one reward
  double truncated_frac = 0.0;
  double grad_norm = 0.0;
  int64_t loss_tokens = 0;
  double clip_frac = 0.0;  // low + high
  double entropy_mean = 0.0;
};
StepHealth step_health(const RlStepResult& result);

// Warns about each kind of silent failure when it happens, then not again for `repeat_after` steps.
class HealthMonitor {
 public:
  static constexpr double kTruncatedFrac = 0.9;  // responses cut at sampler.max_new_tokens
  static constexpr double kClipFrac = 0.8;       // tokens whose ratio is clipped
  static constexpr double kEntropyDrop = 0.1;    // entropy below this fraction of the first step's
  static constexpr double kEntropyFloor = 1e-3;  // or below this many nats

  explicit HealthMonitor(int64_t repeat_after = 100) : repeat_after_(repeat_after) {}
  // The warnings for this step (each a full sentence beginning "warning:").
  std::vector<std::string> check(const StepHealth& h);

 private:
  bool due(const std::string& kind, int64_t step);
  int64_t repeat_after_;
  std::map<std::string, int64_t> last_warned_;
  double first_entropy_ = -1.0;
};

// Writes lines to a stream; on a terminal also keeps one progress line that is rewritten in place.
class Console {
 public:
  Console(std::FILE* out, bool interactive) : out_(out), interactive_(interactive) {}
  void line(const std::string& text);      // a full line (clears the progress line first)
  void progress(const std::string& text);  // ignored unless interactive
  bool interactive() const { return interactive_; }

 private:
  void clear_progress();
  std::FILE* out_;
  bool interactive_;
  bool progress_shown_ = false;
};

// The process's stderr console, interactive when stderr is a terminal.
Console& stderr_console();

}  // namespace gtpo::rl
