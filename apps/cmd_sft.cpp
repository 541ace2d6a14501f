// gtpo sft: the supervised warm start alone, saved as a model checkpoint that `gtpo train` can start from
// (train.init_from).
#include <signal.h>

#include <cstdio>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "apps/run_setup.h"
#include "model/checkpoint.h"
#include "rl/evaluate.h"
#include "rl/non_finite.h"
#include "rl/run/console.h"
#include "rl/run/run_log.h"
#include "rl/run/trainer.h"
#include "rl/run_config.h"
#include "rl/sft.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {{"--out", true, "checkpoint directory (default: train.out_dir + /sft)"},
                                      device_flag("train.device, cpu; same as train.device=VALUE")};
}

int run_sft(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo sft CONFIG.yaml [section.key=value ...] [--out DIR]",
          "Supervised warm start on the task's reference solutions (loss on the solution tokens\n"
          "only) for sft.steps steps of sft.batch_size; then a greedy test evaluation and a model\n"
          "checkpoint. SIGINT (^C) or SIGTERM stops after the current step and writes the checkpoint\n"
          "of the steps done, without the evaluation (exit status 130 or 143)."))
    return 0;
  GTPO_CHECK(args.positionals().size() == 1, "sft: expected one CONFIG.yaml (see --help)");
  rl::ConfigOverrides overrides = args.overrides();
  add_device_override(args, overrides);
  rl::RunConfig config = rl::load_run_config(args.positionals()[0], overrides);
  GTPO_CHECK(config.sft.steps > 0, "sft: sft.steps is 0; set it in the config or as sft.steps=N");
  print_config_notes(config);
  RunObjects run = build_run(config);
  print_warnings(run);
  const std::string out = args.get("--out", config.train.out_dir + "/sft");
  model::check_replaceable_checkpoint(out, "sft --out");  // before the work, not after it
  rl::JsonlLog log(config.train.out_dir + "/sft.jsonl", 0);
  uint64_t cursor = 0;
  int64_t steps_done = 0;
  optim::AdamW optimizer(run.model->parameters(), rl::sft_adam_options(config));
  install_stop_handler();
  try {
    const auto on_step = [&](const rl::SftStep& s) {
      log.write(rl::sft_step_json(s));
      if (config.log.progress && rl::sft_line_due(s, config.sft.steps))
        std::fprintf(stderr, "%s\n", rl::format_sft_line(s, config.sft.steps).c_str());
    };
    rl::continue_sft(*run.model, *run.tokenizer, *run.source, config, optimizer, steps_done, cursor, on_step,
                     rl::stop_requested);
  } catch (const rl::NonFiniteError& e) {
    fail(e.what(), "; no checkpoint was written (", out, " is as it was)");
  }
  if (rl::stop_requested()) {  // the steps done are saved; nothing more is measured
    model::save_model(out, *run.model, run.tokenizer.get(), "", {{"run_config.yaml", rl::resolved_config_yaml(config)}});
    std::printf("stopped by %s after %lld of %lld SFT steps: test accuracy not measured; checkpoint (%lld steps): %s\n",
                rl::stop_signal() == SIGTERM ? "SIGTERM" : "SIGINT", static_cast<long long>(steps_done),
                static_cast<long long>(config.sft.steps), static_cast<long long>(steps_done), out.c_str());
    return 128 + rl::stop_signal();
  }
  rl::EvalResult e = rl::evaluate(*run.model, *run.tokenizer, *run.source, rl::eval_options(config));
  // With the run config beside the model, eval, sample and score default to this run's task and settings.
  model::save_model(out, *run.model, run.tokenizer.get(), "",
                    {{"run_config.yaml", rl::resolved_config_yaml(config)}});
  std::printf("test accuracy (greedy) after SFT: %.3f on %lld problems; checkpoint: %s\n", e.greedy_accuracy,
              static_cast<long long>(e.problems), out.c_str());
  return 0;
}

}  // namespace gtpo::apps
