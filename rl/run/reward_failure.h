// What the trainer does when a reward function fails during a step: the step has trained on nothing
// (rewards are computed in the rollout phase, before any update), so the state is still the last completed
// step's except for the data cursor, which the step advanced. The cursor is put back, that state is saved
// as a checkpoint (so `--resume` repeats the failed step exactly, with a restarted reward process), and the
// error goes on with where the checkpoint is.
#pragma once
#include <string>

#include "rl/external_reward.h"
#include "rl/rl_step.h"
#include "rl/run/train_state.h"

namespace gtpo::rl {

// STEP runs one RL step; SAVE writes a checkpoint of PROGRESS (in RUN_DIR) and returns its directory.
template <typename Step, typename Save>
RlStepResult rl_step_or_checkpoint(const Step& step, TrainProgress& progress, const std::string& run_dir,
                                   const Save& save) {
  const uint64_t cursor = progress.cursor;
  try {
    return step();
  } catch (const RewardError& e) {
    progress.cursor = cursor;
    const std::string failed = std::to_string(progress.step + 1);
    std::string saved;
    try {
      saved =
          "the state after step " + std::to_string(progress.step) + " is saved in " + save() +
          "; fix the reward and continue with: gtpo train --resume " + run_dir +
          " (add reward.functions[i].command=... to change a command; the reward process starts again and "
          "step " +
          failed + " is repeated)";
    } catch (const std::exception& save_error) {
      saved = std::string("saving a checkpoint failed too: ") + save_error.what();
    }
    throw RewardError(std::string(e.what()) + "\nstep " + failed +
                      " stopped before any update (nothing was trained "
                      "on its rewards); " +
                      saved);
  }
}

}  // namespace gtpo::rl
