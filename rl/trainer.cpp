#include "rl/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "model/checkpoint.h"
#include "rl/advantages.h"
#include "rl/policy_update.h"
#include "rl/rollout_phase.h"
#include "rl/run_log.h"
#include "rl/train_state.h"
#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/safetensors.h"

namespace gtpo::rl {

namespace {
std::atomic<bool> g_stop{false};
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

nlohmann::json eval_json(int64_t step, const EvalResult& e) {
  nlohmann::json j = {{"step", step},
                      {"problems", e.problems},
                      {"greedy_accuracy", e.greedy_accuracy},
                      {"mean_at_k", e.mean_at_k},
                      {"greedy_mean_length", e.greedy_mean_length},
                      {"greedy_truncated", e.greedy_truncated},
                      {"seconds", e.seconds}};
  for (const auto& [k, v] : e.pass_at_k) j["pass@" + std::to_string(k)] = v;
  return j;
}

// Per-token view of one response for samples.jsonl: what a researcher inspects.
nlohmann::json sample_json(int64_t step, const RolloutItem& it, const ResponseResult& r, const ClipStatus& clip,
                           const data::Tokenizer& tok) {
  nlohmann::json tokens = nlohmann::json::array();
  for (int32_t id : it.sample.tokens) tokens.push_back(tok.token_text(id));
  nlohmann::json j = {{"step", step},
                      {"problem", it.problem_index},
                      {"prompt", it.problem.prompt},
                      {"answer", it.problem.answer},
                      {"completion", it.completion},
                      {"correct", it.verdict.correct},
                      {"truncated", it.truncated},
                      {"tokens", tokens},
                      {"logprobs", it.sample.logprobs},
                      {"entropies", it.sample.entropies},
                      {"advantages", r.advantages},
                      {"loss_mask", r.loss_mask},
                      {"clip", clip}};
  if (!r.shaped.empty()) j["shaped"] = r.shaped;
  return j;
}
}  // namespace

void request_stop() { g_stop = true; }
bool stop_requested() { return g_stop.load(); }

Trainer::Trainer(model::Transformer& policy, const data::Tokenizer& tokenizer, const ProblemSource& source,
                 TrainerOptions options)
    : policy_(policy), tokenizer_(tokenizer), source_(source), o_(std::move(options)) {
  GTPO_CHECK(o_.steps >= 0, "train.steps must be >= 0");
  GTPO_CHECK(o_.prompts_per_step > 0, "train.prompts_per_step must be positive");
  GTPO_CHECK(o_.sampling.group_size >= 2 || !o_.rl.dynamic_sampling,
             "sampler.group_size must be at least 2 with dynamic sampling (a group of one is never kept)");
  attach_tokenizer(o_.sampling, tokenizer_);
  o_.rl.max_new_tokens = static_cast<int>(o_.sampling.max_new_tokens);
}

void Trainer::log_progress(const std::string& line) const {
  if (o_.progress) std::fprintf(stderr, "%s\n", line.c_str());
}

TrainSummary Trainer::run(bool resume) {
  namespace fs = std::filesystem;
  fs::create_directories(o_.out_dir);
  TrainSummary summary;
  optim::AdamW optimizer(policy_.parameters(), o_.adam);
  std::unique_ptr<model::Transformer> reference;
  if (o_.rl.kl_coef != 0.0) reference = std::make_unique<model::Transformer>(policy_.config(), policy_.device());

  TrainProgress progress;
  progress.seed = o_.seed;
  if (resume) {
    auto latest = latest_checkpoint(o_.out_dir);
    GTPO_CHECK(latest.has_value(), "--resume: ", o_.out_dir, " has no checkpoint (checkpoints/latest is missing)");
    const std::string weights = *latest + "/model.safetensors";
    model::load_weights(policy_, io::SafetensorsFile::load(weights), weights);
    progress = load_train_state(*latest, optimizer, reference.get());
    GTPO_CHECK(progress.seed == o_.seed, "--resume: the checkpoint was trained with train.seed ", progress.seed,
               " but the config says ", o_.seed);
    log_progress("resumed from " + *latest + " at step " + std::to_string(progress.step));
  } else {
    io::write_file_atomic(o_.out_dir + "/config.yaml", o_.config_yaml);
  }
  const int64_t keep = resume ? progress.step : 0;
  JsonlLog metrics_log(o_.out_dir + "/metrics.jsonl", keep);
  JsonlLog eval_log(o_.out_dir + "/eval.jsonl", keep);
  JsonlLog samples_log(o_.out_dir + "/samples.jsonl", keep);

  auto run_eval = [&](int64_t step, const char* label) {
    EvalOptions eo = o_.eval;
    EvalResult e = evaluate(policy_, tokenizer_, source_, eo);
    eval_log.write(eval_json(step, e));
    std::string line = std::string("eval ") + label + " (step " + std::to_string(step) + "): greedy accuracy " +
                       std::to_string(e.greedy_accuracy).substr(0, 5) + " on " + std::to_string(e.problems) + " test problems";
    for (const auto& [k, v] : e.pass_at_k) line += ", pass@" + std::to_string(k) + " " + std::to_string(v).substr(0, 5);
    log_progress(line + " (" + std::to_string(e.seconds).substr(0, 4) + "s)");
    return e;
  };

  // ---- supervised warm start -------------------------------------------------------------------
  if (!progress.sft_done) {
    if (o_.sft.steps > 0) {
      JsonlLog sft_log(o_.out_dir + "/sft.jsonl", 0);
      log_progress("sft: " + std::to_string(o_.sft.steps) + " steps of " + std::to_string(o_.sft.batch_size) +
                   " reference solutions");
      run_sft(policy_, tokenizer_, source_, o_.sft, progress.cursor, [&](const SftStep& s) {
        nlohmann::json line = {{"step", s.step}, {"loss", s.loss},         {"lr", s.lr},
                               {"grad_norm", s.grad_norm}, {"tokens", s.tokens}, {"seconds", s.seconds}};
        if (o_.sft_eval_every > 0 && s.step % o_.sft_eval_every == 0 && s.step != o_.sft.steps) {
          EvalOptions greedy_only = o_.eval;
          greedy_only.k = 0;
          line["eval_greedy_accuracy"] = evaluate(policy_, tokenizer_, source_, greedy_only).greedy_accuracy;
        }
        sft_log.write(line);
        if (s.step == 1 || s.step % 10 == 0 || s.step == o_.sft.steps) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "sft %lld/%lld | loss %.4f | lr %.2e | %.0f tok/s", static_cast<long long>(s.step),
                        static_cast<long long>(o_.sft.steps), s.loss, s.lr, s.tokens / std::max(s.seconds, 1e-9));
          log_progress(buf);
        }
      });
    }
    progress.sft_done = true;
    if (reference) {  // the frozen reference is the policy RL starts from
      for (const optim::Parameter& p : policy_.parameters())
        reference->parameters().get(p.name).copy_(p.tensor.detach());
    }
    progress.start_accuracy = run_eval(0, "before RL").greedy_accuracy;
  }
  summary.accuracy_before_rl = progress.start_accuracy;

  // ---- RL --------------------------------------------------------------------------------------
  optim::LrSchedule schedule(o_.schedule);
  UpdateOptions uo;
  uo.temperature = o_.sampling.temperature > 0.0f ? o_.sampling.temperature : 1.0f;
  uo.micro_batch_sequences = o_.micro_batch_sequences;
  uo.grad_clip = o_.grad_clip;
  uo.pad_id = o_.sampling.pad_id;
  model::SamplingOptions sampling = o_.sampling;
  sampling.seed = o_.seed;
  double last_accuracy = progress.start_accuracy;
  bool evaluated_last = progress.step == 0;

  while (progress.step < o_.steps && !stop_requested()) {
    const int64_t step = progress.step + 1;
    const auto t_step = Clock::now();
    uo.lr = schedule.lr_at(step - 1);

    const auto t0 = Clock::now();
    RolloutBatch batch = collect_rollouts(policy_, tokenizer_, source_, progress.cursor, o_.prompts_per_step,
                                          sampling, o_.rl);
    const double rollout_s = seconds_since(t0);

    const auto t1 = Clock::now();
    AdvantageResult adv = compute_advantages(batch.responses(), o_.rl);
    const double adv_s = seconds_since(t1);

    const auto t2 = Clock::now();
    UpdateStats up = run_policy_update(policy_, optimizer, batch, adv, o_.rl, uo, reference.get());
    backend_for(policy_.device()).synchronize();  // the optimiser's kernels may still be queued on a GPU
    const double update_s = seconds_since(t2);

    // ---- metrics
    double reward_sum = 0, reward_sq = 0, len_sum = 0, len_max = 0, truncated = 0, ent_sum = 0, ent_n = 0;
    for (const RolloutItem& it : batch.items) {
      const double r = it.verdict.correct ? 1.0 : 0.0;
      reward_sum += r;
      reward_sq += r * r;
      len_sum += static_cast<double>(it.sample.tokens.size());
      len_max = std::max(len_max, static_cast<double>(it.sample.tokens.size()));
      truncated += it.truncated;
      for (float h : it.sample.entropies) ent_sum += h, ent_n += 1;
    }
    const double n_items = std::max<double>(1.0, static_cast<double>(batch.items.size()));
    const double reward_mean = reward_sum / n_items;
    const Diagnostics& d = adv.diagnostics;
    nlohmann::json m = {
        {"step", step},
        {"lr", uo.lr},
        {"accuracy", batch.sampled_responses ? static_cast<double>(batch.sampled_correct) / batch.sampled_responses : 0.0},
        {"reward_mean", reward_mean},
        {"reward_std", std::sqrt(std::max(0.0, reward_sq / n_items - reward_mean * reward_mean))},
        {"response_length_mean", len_sum / n_items},
        {"response_length_max", len_max},
        {"truncated_frac", truncated / n_items},
        {"entropy_mean", ent_n > 0 ? ent_sum / ent_n : 0.0},
        {"groups_sampled", batch.sampled_groups},
        {"groups_kept", batch.kept_groups},
        {"dropped_frac", batch.sampled_groups ? 1.0 - static_cast<double>(batch.kept_groups) / batch.sampled_groups : 0.0},
        {"resample_rounds", batch.rounds},
        {"frac_correct_negative_adv", d.frac_correct_negative},
        {"frac_incorrect_positive_adv", d.frac_incorrect_positive},
        {"entropy_adv_corr", std::isnan(d.entropy_adv_corr) ? nlohmann::json() : nlohmann::json(d.entropy_adv_corr)},
        {"overlong_penalised", d.overlong_penalised},
        {"loss", up.loss.loss},
        {"policy_loss", up.loss.policy_loss},
        {"kl_loss", up.loss.kl_loss},
        {"clip_frac_low", up.loss.clip_frac_low},
        {"clip_frac_high", up.loss.clip_frac_high},
        {"approx_kl", up.loss.approx_kl},
        {"policy_entropy", up.loss.entropy_mean},
        {"ratio_mean", up.loss.ratio_mean},
        {"ratio_max", up.loss.ratio_max},
        {"grad_norm", up.grad_norm},
        {"optimizer_steps", up.optimizer_steps},
        {"loss_tokens", up.tokens},
        {"rollout_tokens_per_s", batch.sampler.generated_tokens / std::max(rollout_s, 1e-9)},
        {"update_tokens_per_s", up.tokens / std::max(update_s, 1e-9)},
        {"seconds_rollout", rollout_s},
        {"seconds_advantages", adv_s},
        {"seconds_update", update_s},
    };
    if (o_.sample_every > 0 && step % o_.sample_every == 0) {
      for (int64_t i = 0; i < std::min<int64_t>(o_.samples_to_log, static_cast<int64_t>(batch.items.size())); ++i)
        samples_log.write(sample_json(step, batch.items[static_cast<size_t>(i)], adv.responses[static_cast<size_t>(i)],
                                      up.clip[static_cast<size_t>(i)], tokenizer_));
    }
    progress.step = step;
    m["seconds_step"] = seconds_since(t_step);
    metrics_log.write(m);
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "step %lld/%lld | acc %.3f | len %.1f | H %.3f | kept %lld/%lld | kl %.4f | clip %.3f/%.3f | "
                  "gnorm %.3f | %.1fs (rollout %.1fs %s tok/s, update %.1fs)",
                  static_cast<long long>(step), static_cast<long long>(o_.steps), m["accuracy"].get<double>(),
                  len_sum / n_items, m["entropy_mean"].get<double>(), static_cast<long long>(batch.kept_groups),
                  static_cast<long long>(batch.sampled_groups), up.loss.approx_kl, up.loss.clip_frac_low,
                  up.loss.clip_frac_high, up.grad_norm, m["seconds_step"].get<double>(), rollout_s,
                  compact(m["rollout_tokens_per_s"].get<double>()).c_str(), update_s);
    if (step % std::max<int64_t>(1, o_.log_every) == 0 || step == o_.steps) log_progress(buf);

    evaluated_last = false;
    if (o_.eval_every > 0 && step % o_.eval_every == 0 && step != o_.steps) {
      last_accuracy = run_eval(step, "").greedy_accuracy;
      evaluated_last = true;
    }
    if (o_.checkpoint_every > 0 && step % o_.checkpoint_every == 0 && step != o_.steps)
      summary.checkpoint = save_train_checkpoint(o_.out_dir, policy_, tokenizer_, optimizer, reference.get(), progress,
                                                 o_.config_yaml);
  }
  summary.interrupted = stop_requested() && progress.step < o_.steps;
  if (!summary.interrupted && !evaluated_last) last_accuracy = run_eval(progress.step, "after RL").greedy_accuracy;
  summary.accuracy_after_rl = last_accuracy;
  summary.steps = progress.step;
  summary.checkpoint =
      save_train_checkpoint(o_.out_dir, policy_, tokenizer_, optimizer, reference.get(), progress, o_.config_yaml);
  log_progress("checkpoint: " + summary.checkpoint);
  return summary;
}

}  // namespace gtpo::rl
