// gtpo train: SFT warm start (when sft.steps > 0), then RL, in a run directory that can be resumed.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "apps/run_setup.h"
#include "rl/run_config.h"
#include "rl/trainer.h"
#include "runtime/dist/communicator.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    {"--resume", true, "continue the run in this directory from its latest checkpoint (its config.yaml is used)"},
    device_flag("train.device, cpu; same as train.device=VALUE")};
}

int run_train(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.help()) {
    std::fputs(usage_text("gtpo train CONFIG.yaml [section.key=value | ~section.key ...]\n       gtpo train --resume RUN_DIR [section.key=value ...]",
                          "Trains with the algorithm of rl.algo: an optional supervised warm start (sft.steps), then\n"
                          "RL steps of grouped rollouts, verification, shaped rewards and advantages, and clipped\n"
                          "policy updates. Writes config.yaml, metrics.jsonl, eval.jsonl, samples.jsonl and\n"
                          "checkpoints/ under train.out_dir. ^C stops after the current step with a checkpoint.\n"
                          "mpirun -np N gtpo train ... runs N data-parallel ranks (docs/distributed.md).\n"
                          "Every key and its default: docs/configuration.md.",
                          kFlags).c_str(), stdout);
    return 0;
  }
  const bool resume = args.has("--resume");
  std::string config_path;
  if (resume) {
    GTPO_CHECK(args.positionals().empty(), "train: with --resume, give no CONFIG (the run's config.yaml is used)");
    config_path = args.get("--resume", "") + "/config.yaml";
    GTPO_CHECK(std::filesystem::exists(config_path), "train --resume: ", config_path, " does not exist");
  } else {
    GTPO_CHECK(args.positionals().size() == 1, "train: expected one CONFIG.yaml (see --help)");
    config_path = args.positionals()[0];
  }
  rl::ConfigOverrides overrides = args.overrides();
  if (resume) overrides.emplace_back("train.out_dir", args.get("--resume", ""));
  add_device_override(args, overrides);
  rl::RunConfig config = rl::load_run_config(config_path, overrides);
  // Under mpirun: one data-parallel rank of several (every rank reads the same config and builds the same
  // model from the same seed or checkpoint); otherwise the single process of today.
  std::unique_ptr<dist::Communicator> comm = dist::make_communicator(config.train.collective_timeout_s);
  if (comm->writer()) print_config_notes(config);
  RunObjects run = build_run(config);
  install_stop_handler();
  if (comm->writer())
    std::fprintf(stderr, "gtpo train: %s on task %s, %s model with %lld parameters on %s%s -> %s\n",
                 config.rl.algo.c_str(), run.source->name().c_str(),
                 model::architecture_name(run.model->config().architecture),
                 static_cast<long long>(run.model->parameters().numel()), device_name(run.model->device()),
                 comm->size() > 1 ? (", " + std::to_string(comm->size()) + " data-parallel ranks").c_str() : "",
                 config.train.out_dir.c_str());
  rl::Trainer trainer(*run.model, *run.tokenizer, *run.source, config, *comm);
  rl::TrainSummary s;
  try {
    s = trainer.run(resume);
  } catch (const std::exception& e) {
    if (comm->size() == 1) throw;
    comm->abort(e.what());  // the other ranks would wait for this one until their timeout
  }
  if (!comm->writer()) return s.interrupted ? 130 : 0;
  std::printf("test accuracy (greedy): before RL %.3f -> after RL %.3f (%+.1f points) after %lld steps%s\n",
              s.accuracy_before_rl, s.accuracy_after_rl, 100.0 * (s.accuracy_after_rl - s.accuracy_before_rl),
              static_cast<long long>(s.steps), s.interrupted ? " (interrupted)" : "");
  std::printf("checkpoint: %s\n", s.checkpoint.c_str());
  return s.interrupted ? 130 : 0;
}

}  // namespace gtpo::apps
