#include "rl/run/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>

#include "model/checkpoint.h"
#include "rl/math/entropy_control.h"
#include "rl/non_finite.h"
#include "rl/report/run_report.h"
#include "rl/rl_step.h"
#include "rl/run/console.h"
#include "rl/run/reward_failure.h"
#include "rl/run/run_dir.h"
#include "rl/run/run_log.h"
#include "rl/run/train_state.h"
#include "runtime/backend.h"
#include "runtime/dist/zero.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "runtime/io/safetensors.h"

namespace gtpo::rl {

namespace {
using Clock = std::chrono::steady_clock;
// How long a reward process gets to fail at the start of a run (a missing script or interpreter ends in
// milliseconds; one still running then is taken as started).
constexpr double kRewardProbeSeconds = 0.3;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

nlohmann::json eval_json(int64_t step, const EvalResult& e) {
  nlohmann::json j = {{"step", step},
                      {"problems", e.problems},
                      {"sampled_problems", e.sampled_problems},
                      {"greedy_accuracy", e.greedy_accuracy},
                      {"mean_at_k", e.mean_at_k},
                      {"greedy_mean_length", e.greedy_mean_length},
                      {"greedy_truncated", e.greedy_truncated},
                      {"seconds", e.seconds}};
  for (const auto& [k, v] : e.pass_at_k) j["pass@" + std::to_string(k)] = v;
  return j;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// config.yaml is the config the latest segment runs with (a later --resume reads it), and segments.jsonl
// says what each segment changed: so an override given with --resume is kept by the next one.
void record_segment(const std::string& out_dir, const std::string& config_yaml, const RunSegment& segment,
                    const TrainProgress& progress) {
  io::write_file_atomic(out_dir + "/config.yaml", config_yaml);
  const std::string path = out_dir + "/segments.jsonl";
  int64_t earlier = 0;
  if (std::filesystem::exists(path))
    for (char ch : io::read_file(path)) earlier += ch == '\n';
  nlohmann::json overrides = nlohmann::json::array();
  for (const auto& [key, value] : segment.overrides)
    overrides.push_back(key.rfind('~', 0) == 0 ? key : key + "=" + value);
  JsonlLog(path).write({{"segment", earlier + 1},
                        {"resumed", segment.resume},
                        {"from_step", progress.step},
                        {"from_sft_step", progress.sft_step},
                        {"config", segment.config},
                        {"overrides", overrides},
                        {"started", utc_now()}});
}

// Per-token view of one response for samples.jsonl: what a researcher inspects.
nlohmann::json sample_json(int64_t step, const RolloutItem& it, const Response& response,
                           const ResponseResult& r, const ClipStatuses& clip, const data::Tokenizer& tok,
                           const std::vector<RewardFunctionConfig>* reward_functions) {
  nlohmann::json j = {{"step", step},
                      {"problem", it.problem_index},
                      {"prompt", it.problem.prompt},
                      {"answer", it.problem.answer},
                      {"completion", it.completion},
                      {"correct", it.verdict.correct},
                      {"reward", it.reward.total},
                      {"truncated", it.truncated},
                      {"tokens", token_texts(tok, it.sample.tokens)},
                      {"logprobs", it.sample.logprobs},
                      {"entropies", response.entropies},
                      {"advantages", r.advantages},
                      {"loss_mask", r.loss_mask},
                      {"clip", clip},
                      {"dropped", r.dropped}};
  if (!r.shaped.empty()) j["shaped"] = r.shaped;
  if (!it.reward.token_rewards.empty()) j["token_rewards"] = it.reward.token_rewards;  // Σ_f weight_f · ρ_f,t
  if (!it.teacher_logprobs
           .empty()) {  // distillation: log π_t of each token and the teacher's own choice there
    j["teacher_logprobs"] = it.teacher_logprobs;
    j["teacher_argmax"] = token_texts(tok, it.teacher_argmax);
  }
  if (reward_functions) {  // the run lists its own functions: each one's value, and its components
    nlohmann::json per_function = nlohmann::json::object();
    for (size_t f = 0; f < reward_functions->size() && f < it.reward.scores.size(); ++f) {
      const std::string& name = (*reward_functions)[f].name;
      per_function[name] = it.reward.scores[f].value;
      for (const auto& [component, value] : it.reward.scores[f].components)
        per_function[name + "/" + component] = value;
    }
    j["rewards"] = std::move(per_function);
  }
  return j;
}

// samples.jsonl's lines of one step: log.samples responses, the kept groups' first; where they are fewer,
// the groups dynamic sampling dropped fill in, marked dropped, with zero advantages and nothing in the loss
// (so a step that dropped everything still shows what the model wrote).
void log_samples(JsonlLog& log, int64_t step, const RlStepResult& r, int64_t how_many,
                 const data::Tokenizer& tok, const std::vector<RewardFunctionConfig>* reward_functions) {
  const size_t wanted = static_cast<size_t>(std::max<int64_t>(how_many, 0));
  const RolloutBatch& batch = r.batch;
  for (size_t i = 0; i < std::min(wanted, batch.items.size()); ++i)
    log.write(sample_json(step, batch.items[i], batch.responses[i], r.advantages.responses[i],
                          r.update.clip[i], tok, reward_functions));
  for (size_t i = 0; batch.items.size() + i < wanted && i < batch.dropped_items.size(); ++i) {
    const RolloutItem& it = batch.dropped_items[i];
    Response response;
    response.entropies = it.sample.entropies;
    ResponseResult result;
    result.advantages.assign(it.sample.tokens.size(), 0.0f);
    result.loss_mask.assign(it.sample.tokens.size(), 0);
    result.dropped = true;
    log.write(sample_json(step, it, response, result, ClipStatuses(it.sample.tokens.size(), ClipStatus::None),
                          tok, reward_functions));
  }
}

}  // namespace

optim::AdamWOptions adam_options(const OptimSection& o) {
  optim::AdamWOptions adam;
  adam.lr = static_cast<float>(o.lr);
  adam.beta1 = static_cast<float>(o.beta1);
  adam.beta2 = static_cast<float>(o.beta2);
  adam.eps = static_cast<float>(o.eps);
  adam.weight_decay = static_cast<float>(o.weight_decay);
  return adam;
}

namespace {
optim::LrScheduleOptions rl_schedule(const RunConfig& c) {
  return {c.optim.schedule, static_cast<float>(c.optim.lr), c.optim.warmup_steps,
          std::max<int64_t>(c.train.steps, c.optim.warmup_steps + 1),
          static_cast<float>(c.optim.min_lr_ratio)};
}
}  // namespace

Trainer::Trainer(model::Transformer& policy, const data::Tokenizer& tokenizer, const ProblemSource& source,
                 const RunConfig& config, dist::Communicator& comm, const model::Transformer* teacher)
    : policy_(policy), tokenizer_(tokenizer), source_(source), c_(config), comm_(comm), teacher_(teacher) {
  GTPO_CHECK(c_.sampler.group_size >= 2 || !c_.rl.dynamic_sampling,
             "sampler.group_size must be at least 2 with dynamic sampling (a group of one is never kept)");
}

void Trainer::log_progress(const std::string& line) const {
  if (c_.log.progress && comm_.writer()) stderr_console().line(line);
}

TrainSummary Trainer::run(const RunSegment& segment) {
  std::string last_checkpoint = "none";
  try {
    return run_unchecked(segment, last_checkpoint);
  } catch (const NonFiniteError& e) {
    throw NonFiniteError(std::string(e.what()) +
                         "; nothing was saved after it; last good checkpoint: " + last_checkpoint);
  } catch (const LogWriteError& e) {
    throw LogWriteError(std::string(e.what()) +
                        "; the run stopped there; last checkpoint: " + last_checkpoint +
                        " (gtpo train --resume continues from it once the logs can be written)");
  }
}

// One segment's state, shared by the phases below: the run directory, the optimisers, the progress that a
// checkpoint saves, the logs, and what the RL loop has measured so far.
struct Trainer::Run {
  Run(const Trainer& t, const RunSegment& segment, std::string& last_checkpoint)
      : segment(segment),
        out_dir(t.c_.train.out_dir),
        config_yaml(resolved_config_yaml(t.c_)),
        writer(t.comm_.writer()),
        last_checkpoint(last_checkpoint),
        optimizer(t.policy_.parameters(), adam_options(t.c_.optim), dist::optimizer_shard(t.comm_)),
        reference(t.c_.rl.kl_coef != 0.0
                      ? std::make_unique<model::Transformer>(t.policy_.config(), t.policy_.device())
                      : nullptr),
        sft_optimizer(t.policy_.parameters(), sft_adam_options(t.c_), dist::optimizer_shard(t.comm_)),
        rewards(t.c_.reward, t.c_.sampler) {
    progress.seed = t.c_.train.seed;
  }

  const RunSegment& segment;
  const std::string& out_dir;
  const std::string config_yaml;
  const bool writer;  // rank 0 of a data-parallel run
  std::string& last_checkpoint;
  optim::AdamW optimizer;  // the RL updates' (with several ranks, this rank's shard: dist::optimizer_step)
  std::unique_ptr<model::Transformer> reference;
  optim::AdamW sft_optimizer;  // SFT has its own; a run stopped during SFT saves and resumes its state
  RewardRunner rewards;        // external reward processes live for the whole run
  TrainProgress progress;
  TrainSummary summary;
  JsonlLog metrics_log, eval_log, samples_log;
  // The RL loop's view of the latest greedy accuracy, and its console.
  double last_accuracy = -1.0;
  int64_t last_accuracy_step = -1;
  bool evaluated_last = false;
  HealthMonitor health;
  Clock::time_point t_loop;
  int64_t first_step = 0;
};

TrainSummary Trainer::run_unchecked(const RunSegment& segment, std::string& last_checkpoint) {
  // A new run needs an empty or absent directory; rank 0 alone creates it (the other ranks write nothing).
  if (!segment.resume && comm_.writer()) require_fresh_run_directory(c_.train.out_dir);
  if (comm_.writer()) io::make_directories(c_.train.out_dir, "train.out_dir");
  Run run(*this, segment, last_checkpoint);
  // Before any work or file: a reward command that cannot run would otherwise show after all of SFT.
  run.rewards.start_processes(kRewardProbeSeconds);
  if (segment.resume && !resume_from_latest(run)) return run.summary;
  open_logs(run);
  if (!run.progress.sft_done && !warm_start(run)) return run.summary;
  run.summary.accuracy_before_rl = run.progress.start_accuracy;
  run.summary.sft_steps = c_.sft.steps;
  rl_phase(run);
  return run.summary;
}

bool Trainer::resume_from_latest(Run& run) {
  auto latest = latest_checkpoint(run.out_dir);
  GTPO_CHECK(latest.has_value(), "--resume: ", run.out_dir,
             " has no checkpoint (checkpoints/latest is missing)",
             holds_failed_start(run.out_dir)
                 ? ": its start ended before the first checkpoint; start it again with gtpo train CONFIG "
                   "train.out_dir=" +
                       run.out_dir + " (its logs are replaced)"
                 : std::string());
  io::verify_directory_digests(*latest);  // before anything in it is trusted
  TrainProgress& progress = run.progress;
  progress = read_train_progress(*latest);
  GTPO_CHECK(progress.seed == c_.train.seed, "--resume: the checkpoint was trained with train.seed ",
             progress.seed, " but the config says ", c_.train.seed);
  if (progress.sft_done && progress.step >= c_.train.steps) {  // evaluated and saved already: nothing to do
    run.summary.already_complete = true;
    run.summary.steps = progress.step;
    run.summary.sft_steps = c_.sft.steps;
    run.summary.accuracy_before_rl = progress.start_accuracy;
    run.summary.checkpoint = *latest;
    return false;
  }
  const std::string weights = *latest + "/model.safetensors";
  model::load_weights(policy_, io::SafetensorsFile::load(weights), weights);
  load_optimizer_state(*latest, progress.sft_done ? run.optimizer : run.sft_optimizer);
  if (run.reference) load_reference_weights(*latest, *run.reference);
  run.last_checkpoint = *latest;
  log_progress("resumed from " + *latest +
               (progress.sft_done ? " at step " + std::to_string(progress.step)
                                  : " at SFT step " + std::to_string(progress.sft_step)));
  return true;
}

// config.yaml and segments.jsonl say what this segment runs; a resumed run's logs keep their lines up to
// the checkpoint's step (what came after it is redone).
void Trainer::open_logs(Run& run) {
  if (run.writer) record_segment(run.out_dir, run.config_yaml, run.segment, run.progress);
  const int64_t keep = run.segment.resume ? run.progress.step : 0;
  auto log_file = [&](const char* name) {
    return run.writer ? JsonlLog(run.out_dir + name, keep) : JsonlLog();
  };
  run.metrics_log = log_file("/metrics.jsonl");
  run.eval_log = log_file("/eval.jsonl");
  run.samples_log = log_file("/samples.jsonl");
}

std::string Trainer::save_checkpoint(Run& run, const optim::AdamW& in_use, const char* phase, int64_t step) {
  check_weights_finite(policy_, phase, step);
  // Collective with several ranks: every rank sends its shard of the optimiser state to rank 0.
  const std::vector<optim::AdamWFullState> optimizer_state = dist::gather_optimizer_state(comm_, in_use);
  if (!run.writer) return run.last_checkpoint;
  run.last_checkpoint = save_train_checkpoint(run.out_dir, policy_, tokenizer_, optimizer_state,
                                              run.reference.get(), run.progress, run.config_yaml);
  if (c_.train.keep_checkpoints > 0) prune_checkpoints(run.out_dir, c_.train.keep_checkpoints);
  return run.last_checkpoint;
}

// The checkpoint of the state before a step that failed on this rank (a reward function). With several
// ranks the optimiser state is spread over ranks that are not all here to gather it: the last checkpoint
// written by every rank together is what stays.
std::string Trainer::save_failed_step(Run& run) {
  GTPO_CHECK(comm_.size() == 1, "with ", comm_.size(),
             " ranks the optimiser state is sharded and one failing rank ",
             "cannot gather it; the last checkpoint is ", run.last_checkpoint);
  return save_checkpoint(run, run.optimizer, "rl", run.progress.step);
}

// A stop request reaches the ranks at different moments; they agree on it so that all stop together.
bool Trainer::stop_agreed() const {
  return comm_.size() == 1 ? stop_requested() : dist::any_rank(comm_, stop_requested(), "stop");
}

// Evaluation is rank 0's (it changes no training state); the other ranks wait at the next collective.
EvalResult Trainer::run_eval(Run& run, int64_t step, const char* label, bool final) {
  if (!run.writer) return EvalResult{};
  const EvalOptions eo = final ? final_eval_options(c_) : eval_options(c_);
  EvalResult e;
  try {
    e = evaluate(policy_, tokenizer_, source_, eo);
  } catch (const NonFiniteError& err) {
    std::string what = err.what();
    if (what.rfind("eval: ", 0) == 0) what = what.substr(6);
    throw NonFiniteError("eval at RL step " + std::to_string(step) + ": " + what);
  }
  run.eval_log.write(eval_json(step, e));
  std::string line = std::string("eval ") + label + " (step " + std::to_string(step) + "): greedy accuracy " +
                     std::to_string(e.greedy_accuracy).substr(0, 5) + " on " + std::to_string(e.problems) +
                     " test problems";
  for (const auto& [k, v] : e.pass_at_k)
    line += ", pass@" + std::to_string(k) + " " + std::to_string(v).substr(0, 5);
  log_progress(line + " (" + std::to_string(e.seconds).substr(0, 4) + "s)");
  return e;
}

// The supervised warm start, then the reference copy, the accuracy RL starts from and the checkpoint RL
// resumes from. False when a stop request ended it: the SFT state is saved as it stands (resumable).
bool Trainer::warm_start(Run& run) {
  TrainProgress& progress = run.progress;
  if (c_.sft.steps > 0) {
    JsonlLog sft_log = run.writer ? JsonlLog(run.out_dir + "/sft.jsonl", progress.sft_step) : JsonlLog();
    log_progress("sft: " + std::to_string(c_.sft.steps) + " steps of " + std::to_string(c_.sft.batch_size) +
                 " reference solutions");
    const auto on_sft_step = [&](const SftStep& s) {
      nlohmann::json line = sft_step_json(s);
      if (run.writer && c_.sft.eval_every > 0 && s.step % c_.sft.eval_every == 0 && s.step != c_.sft.steps) {
        EvalOptions greedy_only = eval_options(c_);
        greedy_only.k = 0;
        line["eval_greedy_accuracy"] = evaluate(policy_, tokenizer_, source_, greedy_only).greedy_accuracy;
      }
      sft_log.write(line);
      if (sft_line_due(s, c_.sft.steps)) log_progress(format_sft_line(s, c_.sft.steps));
    };
    continue_sft(
        policy_, tokenizer_, source_, c_, run.sft_optimizer, progress.sft_step, progress.cursor, on_sft_step,
        [this] { return stop_agreed(); }, comm_);
  }
  if (stop_agreed()) {
    run.summary.interrupted = true;
    run.summary.stop_signal = stop_signal();
    run.summary.sft_steps = progress.sft_step;
    run.summary.checkpoint = save_checkpoint(run, run.sft_optimizer, "sft", progress.sft_step);
    return false;  // the caller prints the checkpoint
  }
  progress.sft_done = true;
  if (run.reference) {  // the frozen reference is the policy RL starts from
    for (const optim::Parameter& p : policy_.parameters())
      run.reference->parameters().get(p.name).copy_(p.tensor.detach());
  }
  if (c_.eval.before_rl) progress.start_accuracy = run_eval(run, 0, "before RL").greedy_accuracy;
  // The warm start is work a failure in RL step 1 (a reward program's bug, say) must not cost: RL resumes
  // here.
  if (c_.sft.steps > 0) run.summary.checkpoint = save_checkpoint(run, run.optimizer, "sft", 0);
  return true;
}

// RL steps until train.steps or an agreed stop, then the final eval (unless the last step had one), the
// final checkpoint and report.
void Trainer::rl_phase(Run& run) {
  TrainProgress& progress = run.progress;
  if (c_.rl.entropy_target > 0.0 && !progress.entropy_coef) progress.entropy_coef = c_.rl.entropy_coef;
  if (c_.rl.entropy_target <= 0.0) progress.entropy_coef.reset();
  optim::LrSchedule schedule(rl_schedule(c_));
  RewardRunner& rewards = run.rewards;
  const RlStepModels models{policy_, run.reference.get(), run.optimizer, tokenizer_, source_, &rewards, comm_,
                            teacher_};
  run.last_accuracy = progress.start_accuracy;
  run.last_accuracy_step = progress.start_accuracy >= 0 ? 0 : -1;
  run.evaluated_last = progress.step == 0;
  run.t_loop = Clock::now();
  run.first_step = progress.step;
  bool stopping = false;
  while (progress.step < c_.train.steps && !(stopping = stop_agreed())) {
    const int64_t step = progress.step + 1;
    const auto t_step = Clock::now();
    const RlStepResult r = rl_step_or_checkpoint(
        [&] {
          return rl_step(models, c_, progress.cursor, step, schedule.lr_at(step - 1), progress.entropy_coef);
        },
        progress, run.out_dir, [&] { return save_failed_step(run); });
    record_step(run, r, rewards, step, t_step);
    after_step(run, step);
  }
  TrainSummary& summary = run.summary;
  summary.interrupted = stopping && progress.step < c_.train.steps;
  summary.stop_signal = summary.interrupted ? stop_signal() : 0;
  if (!summary.interrupted && !run.evaluated_last) {
    run.last_accuracy = run_eval(run, progress.step, "after RL", /*final=*/true).greedy_accuracy;
    run.last_accuracy_step = progress.step;
  }
  summary.accuracy_after_rl = run.last_accuracy;
  summary.accuracy_step = run.last_accuracy_step;
  summary.steps = progress.step;
  summary.checkpoint = save_checkpoint(run, run.optimizer, "rl", progress.step);
  refresh_report(run);  // the caller prints the checkpoint
  log_progress("report: " + run.out_dir + "/report.html (gtpo report " + run.out_dir + " rewrites it)");
}

// A finished step: its numbers checked, its samples and metrics written, its console lines.
void Trainer::record_step(Run& run, const RlStepResult& r, const RewardRunner& rewards, int64_t step,
                          std::chrono::steady_clock::time_point t_step) {
  const UpdateStats& up = r.update;
  check_finite(up.loss.loss, "rl", step, "loss");
  check_finite(up.grad_norm, "rl", step, "gradient norm");
  check_finite(up.loss.entropy_mean, "rl", step, "mean token entropy");
  nlohmann::json m = r.metrics;
  if (c_.train.sample_every > 0 && step % c_.train.sample_every == 0) {
    const std::vector<RewardFunctionConfig>* listed =
        has_reward_functions(c_.reward) ? &rewards.functions() : nullptr;
    log_samples(run.samples_log, step, r, c_.log.samples, tokenizer_, listed);
  }
  run.progress.step = step;
  if (run.progress.entropy_coef)  // rl.entropy_target: the next step's coefficient, saved with the checkpoint
    run.progress.entropy_coef = next_entropy_coef(*run.progress.entropy_coef, c_.rl.entropy_target,
                                                  c_.rl.entropy_target_step, m["entropy_mean"].get<double>());
  m["seconds_step"] = seconds_since(t_step);
  run.metrics_log.write(m);
  if (run.writer)
    for (const std::string& warning : run.health.check(step_health(r)))
      stderr_console().line(warning);  // always
  if (step % std::max<int64_t>(1, c_.log.every) == 0 || step == c_.train.steps) {
    log_progress(format_step_line(m, c_.train.steps, console_columns(c_)));
    if (has_reward_functions(c_.reward)) log_progress("  " + reward_summary(rewards.functions(), m));
  }
  if (c_.log.progress && run.writer) {
    const double per_step = seconds_since(run.t_loop) / static_cast<double>(step - run.first_step);
    stderr_console().progress(
        format_progress_line(m, c_.train.steps, per_step * static_cast<double>(c_.train.steps - step)));
  }
}

// The evals, checkpoints and report refreshes that fall on this step (the last step's come after the loop).
void Trainer::after_step(Run& run, int64_t step) {
  run.evaluated_last = false;
  if (c_.eval.every > 0 && step % c_.eval.every == 0 && step != c_.train.steps) {
    run.last_accuracy = run_eval(run, step, "").greedy_accuracy;
    run.last_accuracy_step = step;
    run.evaluated_last = true;
  }
  const bool checkpoint_due = c_.train.checkpoint_every > 0 && step % c_.train.checkpoint_every == 0;
  if (checkpoint_due && step != c_.train.steps)
    run.summary.checkpoint = save_checkpoint(run, run.optimizer, "rl", step);
  if (step != c_.train.steps && (run.evaluated_last || checkpoint_due)) refresh_report(run);
}

// The run's report.html, rewritten at each eval and checkpoint so that a user can watch the run; a failure
// to write it is reported and never stops training.
void Trainer::refresh_report(const Run& run) const {
  if (!run.writer) return;
  try {
    const nlohmann::json loaded = load_run(run.out_dir);
    io::write_file_atomic(run.out_dir + "/report.html", render_report_html({loaded}));
    if (c_.log.tensorboard) write_tensorboard(loaded, run.out_dir + "/tensorboard");
  } catch (const std::exception& e) {
    stderr_console().line(std::string("warning: could not refresh ") + run.out_dir + "/report.html" +
                          (c_.log.tensorboard ? " and tensorboard/: " : ": ") + e.what());
  }
}

}  // namespace gtpo::rl
