#include "rl/run/console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "rl/rl_step.h"
#include "rl/run/run_log.h"

namespace gtpo::rl {
namespace {

// The value of KEY when it is a number, else NaN (absent, null or not numeric).
double number(const nlohmann::json& m, const char* key) {
  auto it = m.find(key);
  return it != m.end() && it->is_number() ? it->get<double>() : std::nan("");
}

template <typename... Values>
void append_text(std::string& line, const char* fmt, Values... values) {
  char buf[128];
  std::snprintf(buf, sizeof buf, fmt, values...);
  line += buf;
}

void append(std::string& line, const char* fmt, double v) {
  if (std::isnan(v)) return;
  line += " | ";
  append_text(line, fmt, v);
}

// Dynamic sampling dropped every group: the step's batch is empty and its kept-response metrics are zeros.
bool trained_on_nothing(const nlohmann::json& m) { return m.value("groups_kept", int64_t{1}) == 0; }

}  // namespace

ConsoleColumns console_columns(const RunConfig& c) {
  ConsoleColumns cols;
  cols.kept = c.rl.dynamic_sampling;
  const bool several_mini_batches =
      c.rl.mini_batch_prompts > 0 && c.rl.mini_batch_prompts < c.train.prompts_per_step;
  cols.policy_kl = c.rl.ppo_epochs > 1 || several_mini_batches;
  cols.clip = cols.policy_kl;
  cols.kl_ref = c.rl.kl_coef != 0.0;
  return cols;
}

std::string format_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long long t = std::llround(s);
  char buf[32];
  if (t < 60)
    std::snprintf(buf, sizeof buf, "%llds", t);
  else if (t < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, (t % 3600) / 60);
  return buf;
}

std::string format_step_line(const nlohmann::json& m, int64_t total_steps, const ConsoleColumns& cols) {
  std::string line =
      "step " + std::to_string(m.value("step", int64_t{0})) + "/" + std::to_string(total_steps);
  append(line, "acc %.3f", number(m, "accuracy"));
  // Without a kept group, lengths, entropies and the update's figures would be zeros, not measurements.
  if (trained_on_nothing(m)) {
    line += " | no kept group (" + std::to_string(m.value("groups_sampled", int64_t{0})) +
            " sampled): nothing trained";
    append(line, "%.1fs", number(m, "seconds_step"));
    return line;
  }
  append(line, "len %.1f", number(m, "response_length_mean"));
  const double truncated = number(m, "truncated_frac");
  if (truncated > 0) append(line, "trunc %.2f", truncated);
  append(line, "H %.3f", number(m, "entropy_mean"));
  if (cols.kept)
    append_text(line, " | kept %lld/%lld", static_cast<long long>(m.value("groups_kept", int64_t{0})),
                static_cast<long long>(m.value("groups_sampled", int64_t{0})));
  if (cols.policy_kl) append(line, "kl %.4f", number(m, "approx_kl"));
  if (cols.kl_ref) append(line, "kl_ref %.4f", number(m, "kl_loss"));
  if (cols.clip && !std::isnan(number(m, "clip_frac_low")))
    append_text(line, " | clip %.3f/%.3f", number(m, "clip_frac_low"), number(m, "clip_frac_high"));
  append(line, "gnorm %.3f", number(m, "grad_norm"));
  const double step_s = number(m, "seconds_step");
  if (!std::isnan(step_s))
    append_text(line, " | %.1fs (rollout %.1fs %s tok/s, update %.1fs)", step_s, number(m, "seconds_rollout"),
                compact(number(m, "rollout_tokens_per_s")).c_str(), number(m, "seconds_update"));
  return line;
}

bool sft_line_due(const SftStep& s, int64_t total_steps) {
  return s.step == 1 || s.step % 10 == 0 || s.step == total_steps;
}

std::string format_sft_line(const SftStep& s, int64_t total_steps) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "sft %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s",
                static_cast<long long>(s.step), static_cast<long long>(total_steps), s.loss, s.lr,
                s.tokens / std::max(s.seconds, 1e-9));
  return buf;
}

nlohmann::json sft_step_json(const SftStep& s) {
  return {{"step", s.step},           {"loss", s.loss},     {"lr", s.lr},
          {"grad_norm", s.grad_norm}, {"tokens", s.tokens}, {"seconds", s.seconds}};
}

std::string format_progress_line(const nlohmann::json& m, int64_t total_steps, double eta_seconds) {
  const int64_t step = m.value("step", int64_t{0});
  char head[96];
  std::snprintf(head, sizeof head, "step %lld/%lld (%d%%) | ETA %s", static_cast<long long>(step),
                static_cast<long long>(total_steps),
                total_steps > 0 ? static_cast<int>(100 * step / total_steps) : 100,
                format_duration(eta_seconds).c_str());
  std::string line = head;
  append(line, "acc %.3f", number(m, "accuracy"));
  if (trained_on_nothing(m)) {
    line += " | no kept group";
  } else {
    append(line, "H %.3f", number(m, "entropy_mean"));
    append(line, "len %.1f", number(m, "response_length_mean"));
  }
  append(line, "%.2fs/step", number(m, "seconds_step"));
  return line;
}

StepHealth step_health(const RlStepResult& r) {
  StepHealth h;
  const nlohmann::json& m = r.metrics;
  h.step = m.value("step", int64_t{0});
  const std::size_t g = static_cast<std::size_t>(std::max<int64_t>(1, r.batch.group_size));
  const auto& results = r.advantages.responses;
  for (std::size_t start = 0; start < results.size(); start += g) {
    ++h.groups;
    bool informative = false;
    for (std::size_t i = start; i < std::min(results.size(), start + g) && !informative; ++i)
      for (float a : results[i].advantages) informative = informative || a != 0.0f;
    h.informative_groups += informative ? 1 : 0;
  }
  h.truncated_frac = number(m, "truncated_frac");
  h.grad_norm = r.update.grad_norm;
  h.loss_tokens = r.update.tokens;
  h.clip_frac = r.update.loss.clip_frac_low + r.update.loss.clip_frac_high;
  h.entropy_mean = number(m, "entropy_mean");
  return h;
}

bool HealthMonitor::due(const std::string& kind, int64_t step) {
  auto it = last_warned_.find(kind);
  if (it != last_warned_.end() && step - it->second < repeat_after_) return false;
  last_warned_[kind] = step;
  return true;
}

std::vector<std::string> HealthMonitor::check(const StepHealth& h) {
  std::vector<std::string> out;
  const std::string at = "warning: step " + std::to_string(h.step) + ": ";
  const std::string quiet = " (not repeated for " + std::to_string(repeat_after_) + " steps)";
  char buf[96];
  const bool nothing_to_learn = h.informative_groups == 0;
  if (nothing_to_learn && due("no_group", h.step))
    out.push_back(
        at +
        (h.groups == 0 ? "no group was kept (dynamic sampling dropped every group)"
                       : "no group has a non-zero advantage: every response of each group got the "
                         "same reward") +
        ", so this step learns nothing. A task that is too hard or too easy for the model, or a reward "
        "that cannot tell responses apart, does this" +
        quiet);
  if (h.truncated_frac >= kTruncatedFrac && due("truncated", h.step)) {
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * h.truncated_frac);
    out.push_back(at + buf +
                  " of the responses hit sampler.max_new_tokens and count as incorrect; raise "
                  "sampler.max_new_tokens or check that the model can emit its end-of-sequence token" +
                  quiet);
  }
  if (!nothing_to_learn && h.loss_tokens > 0 && h.grad_norm == 0.0 && due("grad_zero", h.step))
    out.push_back(at + "the gradient norm is 0 although " + std::to_string(h.loss_tokens) +
                  " tokens entered the loss: the update changed nothing (check optim.lr and the loss masks)" +
                  quiet);
  if (h.clip_frac >= kClipFrac && due("clip", h.step)) {
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * h.clip_frac);
    out.push_back(
        at + buf +
        " of the loss tokens were clipped (ratio outside [1-rl.clip_low, 1+rl.clip_high]), "
        "so they give no gradient: the policy moves too far per step (lower optim.lr or rl.ppo_epochs)" +
        quiet);
  }
  if (h.groups > 0 && std::isfinite(h.entropy_mean)) {  // no response, no entropy to judge
    if (first_entropy_ < 0) first_entropy_ = h.entropy_mean;
    const bool collapsed = h.entropy_mean < kEntropyFloor ||
                           (first_entropy_ > 0 && h.entropy_mean < kEntropyDrop * first_entropy_);
    if (collapsed && due("entropy", h.step)) {
      std::snprintf(buf, sizeof buf, "mean token entropy %.4g nats (it was %.4g at the first step)",
                    h.entropy_mean, first_entropy_);
      out.push_back(at + "entropy collapse: " + buf +
                    "; the policy has become almost deterministic and will "
                    "stop exploring" +
                    quiet);
    }
  }
  return out;
}

Console& stderr_console() {
  static Console console(stderr, ::isatty(STDERR_FILENO) == 1);
  return console;
}

void Console::clear_progress() {
  if (!progress_shown_) return;
  std::fputs("\r\033[K", out_);
  progress_shown_ = false;
}

void Console::line(const std::string& text) {
  clear_progress();
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Console::progress(const std::string& text) {
  if (!interactive_) return;
  std::fprintf(out_, "\r\033[K%s", text.c_str());
  std::fflush(out_);
  progress_shown_ = true;
}

}  // namespace gtpo::rl
