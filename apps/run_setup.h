// Turns a run configuration into the objects a run needs: tokenizer, model, problem source, and the
// trainer's options. Pure wiring between rl::RunConfig and the layers.
#pragma once
#include <memory>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/problem_source.h"
#include "rl/run_config.h"
#include "rl/trainer.h"

namespace gtpo::apps {

struct RunObjects {
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::unique_ptr<model::Transformer> model;
  std::unique_ptr<rl::ProblemSource> source;
};

// Builds the problem source, the tokenizer and the model (from train.init_from, or freshly initialised
// from the model section with train.seed). vocab_size 0 in the model section means the tokenizer's size.
RunObjects build_run(rl::RunConfig& config);
rl::TrainerOptions trainer_options(const rl::RunConfig& config);
// Installs a SIGINT handler that asks the trainer to stop and checkpoint (a second ^C kills).
void install_stop_handler();

}  // namespace gtpo::apps
