// gtpo bench rlstep: one RL step of a quick-start-like run through rl::rl_step, the function the trainer
// calls, timed phase by phase: rollout (sample + verify), scoring (rewards -> advantages), update (clipped
// policy loss, backward, AdamW). No PyTorch counterpart; it shows where a real step's time goes. On the CPU
// it also reports the update's peak tensor memory, which rl.micro_batch_tokens bounds.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "apps/bench.h"
#include "apps/run_setup.h"
#include "rl/rl_step.h"
#include "rl/run/trainer.h"
#include "rl/run_config.h"
#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"

namespace gtpo::apps::bench {

namespace {
constexpr const char* kQuickstartPath = "configs/quickstart.yaml";

// Used when there is no configs/quickstart.yaml: a small llama on the arith task with the sampler's and
// trainer's default sizes (8 prompts x G 8, up to 48 new tokens). Dynamic sampling is off: a freshly
// initialised model solves nothing, so every group would be dropped and resampled, and the update phase
// would have nothing to do.
const char* kBuiltinConfig = R"(model:
  architecture: llama
  hidden_size: 128
  num_hidden_layers: 4
  num_attention_heads: 4
  num_key_value_heads: 2
  max_position_embeddings: 256
task:
  name: arith
  difficulty: 1
sampler:
  group_size: 8
  max_new_tokens: 48
rl:
  algo: gtpo
  dynamic_sampling: false
train:
  prompts_per_step: 8
log:
  progress: false
)";

// The timed run's config: the given one, else the quick start's where it exists, else the built-in; always
// a fresh model and every group kept.
rl::RunConfig rlstep_config(const Options& o, const std::string& where) {
  rl::RunConfig config = where.empty() ? rl::parse_run_config(kBuiltinConfig, "built-in rlstep config")
                                       : rl::load_run_config(where);
  config.train.seed = o.seed;
  config.train.init_from.clear();  // always a freshly initialised model
  if (!o.teacher.empty()) config.teacher.path = o.teacher;
  // A fresh model solves nothing: with dynamic sampling (the quick start's default) every group would be
  // dropped and the update phase would time nothing. Keep every group so the step does all of its work.
  config.rl.dynamic_sampling = false;
  config.train.device = o.device;
  config.train.matmul_precision = o.precision;
  config.train.deterministic = true;
  return config;
}

// The update's peak tensor memory (CPU allocator, above what is live when it starts) for the last step's
// batch under several micro-batch budgets: bounded by the budget, not by prompts × G × length.
nlohmann::json update_memory(const rl::RunConfig& config, RunObjects& run, optim::AdamW& optimizer,
                             const model::Transformer* reference, const rl::RlStepResult& last, float lr) {
  nlohmann::json memory = nlohmann::json::array();
  if (config.train.device != Device::cpu || last.batch.items.empty()) return memory;
  int64_t longest = 0;
  for (const rl::RolloutItem& it : last.batch.items)
    longest = std::max<int64_t>(
        longest, static_cast<int64_t>(it.sample.prompt_tokens.size() + it.sample.tokens.size()));
  const int64_t padded = longest * static_cast<int64_t>(last.batch.items.size());
  for (int64_t budget : {int64_t{0}, padded / 4, padded / 16, longest}) {
    rl::RunConfig probe = config;
    probe.rl.micro_batch_tokens = budget;
    const model::SamplingOptions sampling =
        rl::sampling_options(probe.sampler, *run.tokenizer, probe.train.seed);
    const size_t live = cpu_backend().allocator_stats().bytes_in_use;
    cpu_backend().reset_allocator_peak();
    (void)rl::run_policy_update(*run.model, optimizer, last.batch, last.advantages, probe.rl,
                                rl::update_options(probe, sampling, lr, /*step=*/1), reference);
    const double peak_mb =
        static_cast<double>(cpu_backend().allocator_stats().peak_bytes_in_use - live) / 1048576.0;
    memory.push_back(
        {{"micro_batch_tokens", budget}, {"padded_tokens", padded}, {"update_peak_tensor_mb", peak_mb}});
    std::fprintf(
        stderr,
        "gtpo: rlstep update peak %.2f MB with rl.micro_batch_tokens=%lld (mini-batch %lld padded tokens)\n",
        peak_mb, static_cast<long long>(budget), static_cast<long long>(padded));
  }
  return memory;
}

// One timed step's phases.
struct Phases {
  double rollout = 0, scoring = 0, update = 0, rewards = 0, teacher = 0;
  int64_t generated = 0, update_tokens = 0;
};

// Medians over the timed runs (the last seconds.size() of phases) of each phase and rate.
nlohmann::json phase_medians(const std::vector<Phases>& phases, const std::vector<double>& seconds) {
  std::vector<double> rollout, scoring, update, rewards_s, teacher, rollout_rate, update_rate, step_rate;
  const size_t first = phases.size() - seconds.size();
  for (size_t i = first; i < phases.size(); ++i) {
    const Phases& p = phases[i];
    rollout.push_back(p.rollout);
    scoring.push_back(p.scoring);
    update.push_back(p.update);
    rewards_s.push_back(p.rewards);
    teacher.push_back(p.teacher);
    rollout_rate.push_back(static_cast<double>(p.generated) / p.rollout);
    update_rate.push_back(static_cast<double>(p.update_tokens) / p.update);
    step_rate.push_back(static_cast<double>(p.generated) / seconds[i - first]);
  }
  // Generated (response) tokens per second of the whole step: the rate a user's run advances at.
  return {{"tokens_per_s", median(step_rate)},
          {"runs", step_rate},
          {"gflops", nullptr},
          {"step_s", median(seconds)},
          {"rollout_s", median(rollout)},
          {"scoring_s", median(scoring)},
          {"update_s", median(update)},
          // Of rollout_s: the reward functions (verifier-only: the scoring of the built-in; with an
          // external reward: its requests, the process's work and the replies).
          {"reward_s", median(rewards_s)},
          {"teacher_s", median(teacher)},  // distillation's scoring passes (teacher and student), else 0
          {"rollout_tokens_per_s", median(rollout_rate)},
          // Response tokens that entered the loss per second of the update phase (prompt tokens are
          // forwarded too but not counted).
          {"update_tokens_per_s", median(update_rate)},
          {"generated_tokens", phases.back().generated}};
}

}  // namespace

nlohmann::json bench_rlstep(const Options& o) {
  std::string where = o.config;
  if (where.empty() && std::filesystem::exists(kQuickstartPath)) where = kQuickstartPath;
  rl::RunConfig config = rlstep_config(o, where);
  RunObjects run = build_run(config);
  const optim::AdamWOptions adam = rl::adam_options(config.optim);
  optim::AdamW optimizer(run.model->parameters(), adam);
  std::unique_ptr<model::Transformer> reference;
  if (config.rl.kl_coef != 0.0) {
    reference = std::make_unique<model::Transformer>(run.model->config(), run.model->device());
    for (const optim::Parameter& p : run.model->parameters())
      reference->parameters().get(p.name).copy_(p.tensor.detach());
  }
  rl::RewardRunner rewards(config.reward, config.sampler);  // an external reward's process lives across runs
  const rl::RlStepModels models{
      *run.model, reference.get(),        optimizer,        *run.tokenizer, *run.source,
      &rewards,   dist::single_process(), run.teacher.get()};
  const double baseline = current_rss_mb();

  std::vector<Phases> phases;
  uint64_t cursor = 0;
  int64_t step_number = 0;
  rl::RlStepResult last;
  auto step = [&] {
    last = rl::rl_step(models, config, cursor, ++step_number, adam.lr);
    phases.push_back({last.seconds_rollout, last.seconds_advantages, last.seconds_update,
                      last.batch.seconds_rewards, last.seconds_teacher, last.batch.sampler.generated_tokens,
                      last.update.tokens});
  };
  const int64_t runs = o.runs > 0 ? o.runs : 5, warmup = o.warmup >= 0 ? o.warmup : 2;
  const std::string name = where.empty() ? "built-in" : where;
  std::fprintf(stderr, "gtpo: rlstep (%s config), %lld timed runs after %lld warm-up\n", name.c_str(),
               static_cast<long long>(runs), static_cast<long long>(warmup));
  const std::vector<double> seconds = time_runs(step, runs, warmup, "rl step", o.device);

  nlohmann::json out = {{"config", where.empty() ? "quickstart (built-in)" : where}};
  out.update(phase_medians(phases, seconds));
  // Peak tensor memory of the update phase above what was live when it started (CPU allocator), and the
  // micro-batch budget that bounds it (0 = the whole mini-batch in one forward).
  out["update_memory"] = update_memory(config, run, optimizer, reference.get(), last, adam.lr);
  out["prompts"] = config.train.prompts_per_step;
  out["group_size"] = config.sampler.group_size;
  out["micro_batch_tokens"] = config.rl.micro_batch_tokens;
  out["params"] = run.model->parameters().numel();
  if (run.teacher) {  // its weights stay resident for the run; its scoring pass builds no graph
    out["teacher_params"] = run.teacher->parameters().numel();
    out["teacher_weights_mb"] = static_cast<double>(run.teacher->parameters().numel()) * 4.0 / 1e6;
  }
  out["baseline_rss_mb"] = baseline;
  return out;
}

}  // namespace gtpo::apps::bench
