// gtpo init: writes a freshly initialised model checkpoint, read from a run config as gtpo train reads it.
#include <cstdio>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/run_setup.h"
#include "model/checkpoint.h"
#include "rl/run_config.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {{"--out", true, "checkpoint directory to write (required)"}};
}  // namespace

int run_init(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo init CONFIG.yaml [section.key=value ...] --out DIR",
          "Writes the model gtpo train would start CONFIG's run from (its model: section initialised\n"
          "with train.seed, GPT-2-style scaled by depth, and its tokenizer: section, by default the\n"
          "task's characters) as a checkpoint directory: model.safetensors, config.yaml,\n"
          "tokenizer.json, and config.json + generation_config.json so transformers' from_pretrained\n"
          "loads it. CONFIG is read as gtpo train reads it (every key and its default:\n"
          "docs/configuration.md); a config holding only a model: section is enough."))
    return 0;
  GTPO_CHECK(args.positionals().size() == 1, "init: expected exactly one CONFIG.yaml, got ", args.positionals().size());
  const std::string path = args.positionals()[0];
  const std::string out = args.require("--out");
  rl::RunConfig config = rl::load_run_config(path, args.overrides());
  GTPO_CHECK(config.train.init_from.empty(), path, ": train.init_from is ", config.train.init_from,
             ": gtpo init writes a fresh model; to copy a checkpoint use gtpo export");
  GTPO_CHECK(config.model.has_value(), path, ": no 'model:' section");
  if (config.train.device != Device::cpu)
    std::fprintf(stderr,
                 "note: init: train.device has no effect here: the weights are initialised and written "
                 "on the CPU, as on any device\n");
  config.train.device = Device::cpu;
  print_config_notes(config);
  RunObjects run;
  run.source = make_problem_source(config);
  init_model_from_section(config, *run.source, run);
  model::save_model(out, *run.model, run.tokenizer.get());
  std::printf("wrote %s: %s, %lld parameters, seed %llu, tokenizer %s\n", out.c_str(),
              model::architecture_name(config.model->architecture),
              static_cast<long long>(run.model->parameters().numel()),
              static_cast<unsigned long long>(config.train.seed), tokenizer_where(config).c_str());
  return 0;
}

}  // namespace gtpo::apps
