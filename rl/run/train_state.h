// Training checkpoints: everything a run needs to continue bit for bit — model weights, optimiser
// state, the step, the data cursor and the seed (all randomness is counter-based, keyed by the seed and
// the data indices, so the cursor is the whole RNG state). A checkpoint is a directory
// RUN/checkpoints/step-NNNNNN written as a whole by io::write_directory_atomic (a temporary directory,
// fsync, renames; an existing one of that name is replaced, never kept stale); the file
// RUN/checkpoints/latest names the newest one and is replaced atomically after it, so a kill at any
// moment leaves the previous checkpoint or the new one loadable.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "runtime/optim/adamw.h"

namespace gtpo::rl {

struct TrainProgress {
  int64_t step = 0;     // RL steps completed
  uint64_t cursor = 0;  // next train-split index
  uint64_t seed = 0;
  bool sft_done = false;
  int64_t sft_step = 0;          // SFT steps completed (a run stopped during SFT continues from here)
  double start_accuracy = -1.0;  // greedy test accuracy when RL started (for the final summary)
  // The next RL step's entropy coefficient with rl.entropy_target (rl/math/entropy_control.h), else none.
  std::optional<double> entropy_coef;
};

// Writes the checkpoint and updates `latest`; returns its directory. run_config_yaml (the resolved run
// configuration) is kept beside the model as run_config.yaml. OPTIMIZER is the whole state of the one in
// use (AdamW::full_state, or dist::gather_optimizer_state with several ranks): SFT's while
// progress.sft_done is false, the RL optimiser after.
std::string save_train_checkpoint(const std::string& run_dir, const model::Transformer& model,
                                  const data::Tokenizer& tokenizer,
                                  const std::vector<optim::AdamWFullState>& optimizer,
                                  const model::Transformer* reference, const TrainProgress& progress,
                                  const std::string& run_config_yaml);

// Deletes all but the newest KEEP (>= 1) checkpoints RUN/checkpoints/step-NNNNNN, by step number; the one
// `latest` names is always kept. Each is first renamed to step-NNNNNN.deleting, then removed, so a kill
// half-way never leaves a partial directory under a checkpoint's name; leftover *.deleting directories are
// removed by the next call.
void prune_checkpoints(const std::string& run_dir, int64_t keep);

// The directory `latest` names, or nullopt when the run has no checkpoint yet.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

// Progress (state.json) of a training checkpoint; an error when the directory has none.
TrainProgress read_train_progress(const std::string& checkpoint_dir);
// Restores optimiser state (into the optimiser that was in use when it was saved, see save_train_checkpoint;
// a sharded one keeps its part, so a checkpoint loads with any number of ranks)
// and the reference weights (when given) from a checkpoint directory; the model itself is loaded with
// model::load_weights.
void load_optimizer_state(const std::string& checkpoint_dir, optim::AdamW& optimizer);
void load_reference_weights(const std::string& checkpoint_dir, model::Transformer& reference);

}  // namespace gtpo::rl
