// Turns a run configuration into the objects a run needs: tokenizer, model and problem source. Pure
// wiring between rl::RunConfig and the layers.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "apps/args.h"
#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/problem_source.h"
#include "rl/run/trainer.h"
#include "rl/run_config.h"

namespace gtpo::apps {

struct RunObjects {
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<rl::ProblemSource> source;
  std::unique_ptr<model::Transformer> teacher;  // teacher.path's frozen model (rl/distillation.h), else null
  // What the config most likely did not mean (a model: section that init_from overrides, optim.lr at its
  // default for a large trained model): the caller's writer prints them (print_warnings).
  std::vector<std::string> warnings;
  std::vector<std::string> notes;  // what was chosen for the user (fewer threads on a busy machine)
};

// The problems of C: its task.train_file / test_file, else its task generator (seeded with train.seed).
std::unique_ptr<rl::ProblemSource> make_problem_source(const rl::RunConfig& c);
// Where C's tokenizer comes from, for messages ("tokenizer.kind char", "tokenizer.file F").
std::string tokenizer_where(const rl::RunConfig& c);
// RUN's tokenizer (C's tokenizer: section; SOURCE gives a char tokenizer its alphabet) and its model, freshly
// initialised from C's model: section with train.seed on train.device: how a run without train.init_from
// starts, and all gtpo init does. model.vocab_size 0 becomes the tokenizer's size; a tokenizer the model
// cannot represent, or no model: section, is a gtpo::Error.
void init_model_from_section(rl::RunConfig& c, const rl::ProblemSource& source, RunObjects& run);
// Builds the problem source, the tokenizer and the model (from train.init_from, or freshly initialised
// from the model section with train.seed: init_model_from_section). vocab_size 0 in the model section means
// the tokenizer's size. The model lives on train.device, whose backend is first configured with
// train.matmul_precision and train.deterministic; an unavailable device is a gtpo::Error before anything else
// is done.
RunObjects build_run(rl::RunConfig& config);
// Prints the notes parsing left for the user (dropped task options, ...) to stderr.
void print_config_notes(const rl::RunConfig& config);
// A key whose value differs between two of gtpo's YAML texts ("unset" where a side has none): the model
// section a checkpoint overrides, the settings a resume changes.
struct ValueChange {
  std::string key, before, after;  // key: "section.key" or "section.list[i].key"
};
std::vector<ValueChange> yaml_value_changes(const std::string& before, const std::string& after);

// Prints RunObjects::notes and warnings to stderr.
void print_warnings(const RunObjects& run);
// The "--device cpu|cuda" argument of train and sft as the config override train.device=VALUE (checked
// here, so a bad value names the flag); nothing when the flag is absent.
void add_device_override(const Args& args, rl::ConfigOverrides& overrides);
// Installs SIGINT and SIGTERM handlers that ask the trainer to stop after the current step and checkpoint
// (a second signal kills at once, with exit status 128 + signal).
void install_stop_handler();

}  // namespace gtpo::apps
