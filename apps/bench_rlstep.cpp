// gtpo bench rlstep: one RL step of a quick-start-like run, timed phase by phase with the pieces the
// trainer runs (rl/trainer.cpp): rollout (sample + verify), scoring (rewards -> advantages), update
// (clipped policy loss, backward, AdamW). No PyTorch counterpart; it shows where a real step's time goes.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "apps/bench.h"
#include "apps/run_setup.h"
#include "rl/advantages.h"
#include "rl/policy_update.h"
#include "rl/rollout_phase.h"
#include "rl/run_config.h"
#include "runtime/backend.h"

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

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

nlohmann::json bench_rlstep(const Options& o) {
  std::string where = o.config;
  if (where.empty() && std::filesystem::exists(kQuickstartPath)) where = kQuickstartPath;
  rl::RunConfig config = where.empty() ? rl::parse_run_config(kBuiltinConfig, "built-in rlstep config")
                                       : rl::load_run_config(where);
  config.train.seed = o.seed;
  config.train.init_from.clear();  // always a freshly initialised model
  // A fresh model solves nothing: with dynamic sampling (the quick start's default) every group would be
  // dropped and the update phase would time nothing. Keep every group so the step does all of its work.
  config.rl.dynamic_sampling = false;
  config.train.device = o.device;
  config.train.matmul_precision = o.precision;
  config.train.deterministic = true;
  RunObjects run = build_run(config);
  rl::TrainerOptions to = trainer_options(config);
  // The trainer's own preparation of the step (rl/trainer.cpp).
  rl::attach_tokenizer(to.sampling, *run.tokenizer);
  to.rl.max_new_tokens = static_cast<int>(to.sampling.max_new_tokens);
  model::SamplingOptions sampling = to.sampling;
  sampling.seed = to.seed;
  rl::UpdateOptions uo;
  uo.temperature = to.sampling.temperature > 0.0f ? to.sampling.temperature : 1.0f;
  uo.micro_batch_sequences = to.micro_batch_sequences;
  uo.grad_clip = to.grad_clip;
  uo.pad_id = to.sampling.pad_id;
  uo.lr = to.adam.lr;
  optim::AdamW optimizer(run.model->parameters(), to.adam);
  std::unique_ptr<model::Transformer> reference;
  if (to.rl.kl_coef != 0.0) {
    reference = std::make_unique<model::Transformer>(run.model->config(), run.model->device());
    for (const optim::Parameter& p : run.model->parameters())
      reference->parameters().get(p.name).copy_(p.tensor.detach());
  }
  const double baseline = current_rss_mb();

  struct Phases {
    double rollout = 0, scoring = 0, update = 0;
    int64_t generated = 0, update_tokens = 0;
  };
  std::vector<Phases> phases;
  uint64_t cursor = 0;
  auto step = [&] {
    Phases p;
    auto t = std::chrono::steady_clock::now();
    rl::RolloutBatch batch = rl::collect_rollouts(*run.model, *run.tokenizer, *run.source, cursor, to.prompts_per_step,
                                                  sampling, to.rl);
    p.rollout = seconds_since(t);
    t = std::chrono::steady_clock::now();
    rl::AdvantageResult adv = rl::compute_advantages(batch.responses(), to.rl);
    p.scoring = seconds_since(t);
    t = std::chrono::steady_clock::now();
    rl::UpdateStats up = rl::run_policy_update(*run.model, optimizer, batch, adv, to.rl, uo, reference.get());
    backend_for(o.device).synchronize();
    p.update = seconds_since(t);
    p.generated = batch.sampler.generated_tokens;
    p.update_tokens = up.tokens;
    phases.push_back(p);
  };
  const int64_t runs = o.runs > 0 ? o.runs : 5, warmup = o.warmup >= 0 ? o.warmup : 2;
  const std::string name = where.empty() ? "built-in" : where;
  std::fprintf(stderr, "gtpo: rlstep (%s config), %lld timed runs after %lld warm-up\n", name.c_str(),
               static_cast<long long>(runs), static_cast<long long>(warmup));
  const std::vector<double> seconds = time_runs(step, runs, warmup, "rl step", o.device);

  std::vector<double> rollout, scoring, update, rollout_rate, update_rate, step_rate;
  for (size_t i = phases.size() - seconds.size(); i < phases.size(); ++i) {
    const Phases& p = phases[i];
    rollout.push_back(p.rollout);
    scoring.push_back(p.scoring);
    update.push_back(p.update);
    rollout_rate.push_back(static_cast<double>(p.generated) / p.rollout);
    update_rate.push_back(static_cast<double>(p.update_tokens) / p.update);
    step_rate.push_back(static_cast<double>(p.generated) / seconds[i - (phases.size() - seconds.size())]);
  }
  return {{"config", where.empty() ? "quickstart (built-in)" : where},
          // Generated (response) tokens per second of the whole step: the rate a user's run advances at.
          {"tokens_per_s", median(step_rate)},
          {"runs", step_rate},
          {"gflops", nullptr},
          {"step_s", median(seconds)},
          {"rollout_s", median(rollout)},
          {"scoring_s", median(scoring)},
          {"update_s", median(update)},
          {"rollout_tokens_per_s", median(rollout_rate)},
          // Response tokens that entered the loss per second of the update phase (prompt tokens are
          // forwarded too but not counted).
          {"update_tokens_per_s", median(update_rate)},
          {"generated_tokens", phases.back().generated},
          {"prompts", to.prompts_per_step},
          {"group_size", to.sampling.group_size},
          {"params", run.model->parameters().numel()},
          {"baseline_rss_mb", baseline}};
}

}  // namespace gtpo::apps::bench
