// What eval, sample and score read: a checkpoint (or a run directory's latest one), with the run
// configuration it was trained with when it has one (run_config.yaml), so that task options, the
// tokenizer and sampling settings default to the run's own; flags override them. Also their --threads.
#pragma once
#include <optional>
#include <string>

#include "apps/args.h"
#include "model/checkpoint.h"
#include "rl/run_config.h"

namespace gtpo::apps {

struct CheckpointInput {
  std::string dir;  // the checkpoint directory read
  model::LoadedModel loaded;
  std::optional<rl::RunConfig> run_config;  // from DIR/run_config.yaml; absent for init and older checkpoints
};

// Every command's way to name a checkpoint (--checkpoint, export, train.init_from, tokenize --tokenizer):
// a checkpoint directory, a run directory (then its latest checkpoint) or RUN/checkpoints/latest itself.
// Anything else comes back as it is.
std::string resolve_checkpoint_dir(const std::string& path);

// Fails unless PATH is a directory, naming KEY: a model is always one (a checkpoint, a run, an HF save).
void require_model_directory(const std::string& path, const std::string& key);

// Applies --threads and --device, resolves --checkpoint, loads the model (on that device) and its tokenizer,
// reads run_config.yaml when present and prints on stderr what was taken from it. COMMAND names the command
// in messages.
CheckpointInput load_checkpoint_input(const Args& args, const char* command);

// The --threads flag: CPU threads of the command (0 = the library default).
FlagSpec threads_flag();

// The --checkpoint flag's help text, shared so the three commands say the same.
FlagSpec checkpoint_flag();

// --chat-template for sample and eval: how prompts become model text (the prompt.template to use).
FlagSpec chat_template_flag();
// The prompt.template value for IN's prompts: --chat-template if given ("none" = as given, "tokenizer", a
// Jinja file or a {prompt} pattern); else (auto) the run's prompt.template when IN has a run config, else
// "tokenizer" when the directory has a chat template (as transformers' pipeline applies it), else as given.
// Says on stderr which, naming COMMAND.
std::string chosen_prompt_template(const Args& args, const CheckpointInput& in, const char* command);

}  // namespace gtpo::apps
