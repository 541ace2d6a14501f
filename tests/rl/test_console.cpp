// The console: only the columns a config can make non-zero, the in-place progress line only on a terminal,
// and the health warnings, each worded and rate-limited. Also the Cov(log-prob, advantage) diagnostic.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>

#include "rl/math/diagnostics.h"
#include "rl/run/console.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;

namespace {

nlohmann::json step_metrics_line() {
  return {{"step", 7},           {"accuracy", 0.5},         {"response_length_mean", 12.25}, {"truncated_frac", 0.0},
          {"entropy_mean", 0.4}, {"groups_kept", 3},        {"groups_sampled", 4},           {"approx_kl", 0.0123},
          {"kl_loss", 0.0456},   {"clip_frac_low", 0.011},  {"clip_frac_high", 0.022},       {"grad_norm", 1.5},
          {"seconds_step", 2.0}, {"seconds_rollout", 1.5}, {"rollout_tokens_per_s", 1234.0}, {"seconds_update", 0.5}};
}

StepHealth healthy(int64_t step) {
  StepHealth h;
  h.step = step;
  h.groups = 4;
  h.informative_groups = 2;
  h.truncated_frac = 0.1;
  h.grad_norm = 0.7;
  h.loss_tokens = 100;
  h.clip_frac = 0.01;
  h.entropy_mean = 0.5;
  return h;
}

std::string read_back(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST_CASE("console: an on-policy config leaves out kl, clip and kept, which it cannot make non-zero", "[console]") {
  RunConfig c;
  c.train.prompts_per_step = 16;
  c.rl.dynamic_sampling = false;
  const ConsoleColumns cols = console_columns(c);
  CHECK_FALSE(cols.kept);
  CHECK_FALSE(cols.policy_kl);
  CHECK_FALSE(cols.clip);
  CHECK_FALSE(cols.kl_ref);
  const std::string line = format_step_line(step_metrics_line(), 100, cols);
  CHECK(line.rfind("step 7/100 | acc 0.500 | len 12.2", 0) == 0);
  CHECK_THAT(line, Contains("H 0.400"));
  CHECK_THAT(line, Contains("gnorm 1.500"));
  CHECK_THAT(line, Contains("1.23k tok/s"));
  CHECK_THAT(line, !Contains("kl") && !Contains("clip") && !Contains("kept") && !Contains("trunc"));
}

TEST_CASE("console: columns appear when the config can make them non-zero", "[console]") {
  RunConfig c;
  c.train.prompts_per_step = 16;
  c.rl.ppo_epochs = 2;
  CHECK(console_columns(c).clip);
  CHECK(console_columns(c).policy_kl);
  c.rl.ppo_epochs = 1;
  c.rl.mini_batch_prompts = 4;  // four optimiser steps per batch: π_θ leaves π_old after the first
  CHECK(console_columns(c).clip);
  c.rl.mini_batch_prompts = 16;  // one mini-batch: on-policy again
  CHECK_FALSE(console_columns(c).clip);
  c.rl.kl_coef = 0.01;
  c.rl.dynamic_sampling = true;
  CHECK(console_columns(c).kl_ref);
  CHECK(console_columns(c).kept);
  ConsoleColumns all{true, true, true, true};
  nlohmann::json m = step_metrics_line();
  m["truncated_frac"] = 0.25;
  const std::string line = format_step_line(m, 100, all);
  CHECK_THAT(line, Contains("kept 3/4"));
  CHECK_THAT(line, Contains("kl 0.0123"));
  CHECK_THAT(line, Contains("kl_ref 0.0456"));
  CHECK_THAT(line, Contains("clip 0.011/0.022"));
  CHECK_THAT(line, Contains("trunc 0.25"));
}

TEST_CASE("console: a missing or null metric is left out, never printed as 0", "[console]") {
  nlohmann::json m = {{"step", 1}, {"accuracy", nullptr}, {"entropy_mean", 0.25}};
  const std::string line = format_step_line(m, 10, ConsoleColumns{});
  CHECK(line == "step 1/10 | H 0.250");
}

TEST_CASE("console: the progress line has the step, the percentage and the ETA", "[console]") {
  const std::string line = format_progress_line(step_metrics_line(), 100, 125.0);
  CHECK(line.rfind("step 7/100 (7%) | ETA 2m05s | acc 0.500 | H 0.400 | len 12.2 | 2.00s/step", 0) == 0);
  CHECK(format_duration(42.4) == "42s");
  CHECK(format_duration(3725) == "1h02m");
  CHECK(format_duration(std::nan("")) == "?");
}

TEST_CASE("console: not a terminal gets only full lines, a terminal gets the line rewritten in place", "[console]") {
  std::FILE* plain = std::tmpfile();
  REQUIRE(plain != nullptr);
  Console file_console(plain, false);
  file_console.progress("step 1/3");
  file_console.line("eval done");
  file_console.progress("step 2/3");
  CHECK(read_back(plain) == "eval done\n");
  std::fclose(plain);

  std::FILE* tty = std::tmpfile();
  REQUIRE(tty != nullptr);
  Console term(tty, true);
  term.progress("step 1/3");
  term.progress("step 2/3");
  term.line("a full line");
  term.progress("step 3/3");
  CHECK(read_back(tty) == "\r\033[Kstep 1/3\r\033[Kstep 2/3\r\033[Ka full line\n\r\033[Kstep 3/3");
  std::fclose(tty);
}

TEST_CASE("console: a healthy step raises no warning", "[console][warnings]") {
  HealthMonitor monitor;
  for (int64_t s = 1; s <= 5; ++s) CHECK(monitor.check(healthy(s)).empty());
}

TEST_CASE("console: each silent failure is warned about once, clearly, then again only after the quiet period",
          "[console][warnings]") {
  struct Case {
    const char* what;
    void (*breaks)(StepHealth&);
    const char* says;
  };
  const Case cases[] = {
      {"no informative group", [](StepHealth& h) { h.informative_groups = 0; }, "same reward"},
      {"no group kept", [](StepHealth& h) { h.groups = 0, h.informative_groups = 0; }, "no group was kept"},
      {"truncation", [](StepHealth& h) { h.truncated_frac = 0.95; }, "95% of the responses hit sampler.max_new_tokens"},
      {"zero gradient", [](StepHealth& h) { h.grad_norm = 0.0; }, "gradient norm is 0"},
      {"clipping", [](StepHealth& h) { h.clip_frac = 0.9; }, "90% of the loss tokens were clipped"},
      {"entropy collapse", [](StepHealth& h) { h.entropy_mean = 0.0004; }, "entropy collapse"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    HealthMonitor monitor(10);
    CHECK(monitor.check(healthy(1)).empty());
    StepHealth bad = healthy(2);
    c.breaks(bad);
    const std::vector<std::string> first = monitor.check(bad);
    REQUIRE(first.size() == 1);
    CHECK(first[0].rfind("warning: step 2: ", 0) == 0);
    CHECK_THAT(first[0], Contains(c.says));
    CHECK_THAT(first[0], Contains("not repeated for 10 steps"));
    for (int64_t s = 3; s <= 11; ++s) {
      bad.step = s;
      CHECK(monitor.check(bad).empty());
    }
    bad.step = 12;
    CHECK(monitor.check(bad).size() == 1);
  }
}

TEST_CASE("console: entropy collapse is judged against the first step's entropy", "[console][warnings]") {
  HealthMonitor monitor;
  StepHealth h = healthy(1);
  h.entropy_mean = 2.0;
  CHECK(monitor.check(h).empty());
  h.step = 2;
  h.entropy_mean = 0.5;  // a quarter: learning, not collapse
  CHECK(monitor.check(h).empty());
  h.step = 3;
  h.entropy_mean = 0.15;  // under a tenth
  const auto w = monitor.check(h);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Contains("mean token entropy 0.15 nats (it was 2 at the first step)"));
}

TEST_CASE("console: a step without any kept response says so, and is not taken for an entropy collapse",
          "[console][warnings]") {
  HealthMonitor monitor;
  StepHealth h = healthy(1);
  h.groups = 0;
  h.informative_groups = 0;
  h.entropy_mean = 0.0;  // the mean over no tokens
  h.loss_tokens = 0;
  h.grad_norm = 0.0;
  const auto w = monitor.check(h);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Contains("no group was kept"));
  CHECK(monitor.check(healthy(2)).empty());  // the first real entropy is the reference
}

TEST_CASE("console: a zero gradient with nothing to learn is explained once, by the cause", "[console][warnings]") {
  HealthMonitor monitor;
  StepHealth h = healthy(1);
  h.informative_groups = 0;
  h.grad_norm = 0.0;
  const auto w = monitor.check(h);
  REQUIRE(w.size() == 1);
  CHECK_THAT(w[0], Contains("learns nothing"));
}

TEST_CASE("diagnostics: Cov(log-prob, advantage) over the tokens in the loss", "[diagnostics]") {
  std::vector<std::vector<float>> logprobs = {{-1.0f, -2.0f, -9.0f}, {-3.0f}};
  std::vector<ResponseResult> results(2);
  results[0].advantages = {1.0f, 0.0f, 5.0f};
  results[0].loss_mask = {1, 1, 0};  // the third token is masked out and must not count
  results[1].advantages = {-1.0f};
  results[1].loss_mask = {1};
  // lp = -1, -2, -3 (mean -2); A = 1, 0, -1 (mean 0): cov = ((1)(1) + 0 + (-1)(-1)) / 3.
  CHECK(logprob_advantage_covariance(logprobs, results) == Approx(2.0 / 3.0).epsilon(1e-12));
  results[1].loss_mask = {0};
  results[0].loss_mask = {1, 0, 0};
  CHECK(std::isnan(logprob_advantage_covariance(logprobs, results)));
}

TEST_CASE("console: a step that kept no group says so instead of printing zeros as measurements",
          "[console]") {
  RunConfig c;
  const ConsoleColumns cols = console_columns(c);  // gtpo: dynamic sampling, the kept column
  nlohmann::json m = step_metrics_line();
  m["groups_kept"] = 0;
  m["response_length_mean"] = 0.0;
  m["entropy_mean"] = 0.0;
  m["grad_norm"] = 0.0;
  const std::string line = format_step_line(m, 600, cols);
  CHECK_THAT(line, Contains("step 7/600 | acc 0.500 | no kept group (4 sampled): nothing trained | 2.0s"));
  CHECK_THAT(line, !Contains("len") && !Contains("H 0.000") && !Contains("gnorm"));
  const std::string progress = format_progress_line(m, 600, 30.0);
  CHECK_THAT(progress, Contains("no kept group") && !Contains("len 0.0") && !Contains("H 0.000"));
  // A step that kept groups prints its measurements as before.
  CHECK_THAT(format_step_line(step_metrics_line(), 600, cols), Contains("len 12.2") && Contains("kept 3/4"));
}

TEST_CASE("console: a warm-start step's line and log line are the same for gtpo train and gtpo sft",
          "[console]") {
  SftStep s;
  s.step = 10;
  s.loss = 1.25;
  s.lr = 3e-3;
  s.grad_norm = 0.5;
  s.tokens = 2000;
  s.seconds = 0.5;
  CHECK(format_sft_line(s, 40) == "sft 10/40 | loss 1.2500 | lr 3.00e-03 | 4000 tok/s");
  CHECK(sft_step_json(s).dump() ==
        R"({"grad_norm":0.5,"loss":1.25,"lr":0.003,"seconds":0.5,"step":10,"tokens":2000})");
  CHECK(sft_line_due(s, 40));
  s.step = 11;
  CHECK_FALSE(sft_line_due(s, 40));
  s.step = 1;
  CHECK(sft_line_due(s, 40));
}
