// gtpo train: SFT warm start (when sft.steps > 0), then RL, in a run directory that can be resumed.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "apps/method_help.h"
#include "apps/run_setup.h"
#include "rl/run/console.h"
#include "rl/run/run_checks.h"
#include "rl/run/run_dir.h"
#include "rl/run/train_state.h"
#include "rl/run/trainer.h"
#include "rl/run_config.h"
#include "runtime/dist/communicator.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::apps {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Says what was measured and what was not: an interrupted run has no "after RL" accuracy.
void print_train_summary(const rl::TrainSummary& s, const rl::RunConfig& c) {
  const char* by = s.stop_signal == SIGTERM ? "SIGTERM" : "SIGINT";
  if (s.interrupted && c.sft.steps > 0)
    std::printf("stopped by %s after %lld of %lld SFT steps and %lld of %lld RL steps\n", by,
                static_cast<long long>(s.sft_steps), static_cast<long long>(c.sft.steps),
                static_cast<long long>(s.steps), static_cast<long long>(c.train.steps));
  else if (s.interrupted)
    std::printf("stopped by %s after %lld of %lld RL steps\n", by, static_cast<long long>(s.steps),
                static_cast<long long>(c.train.steps));
  if (!c.eval.before_rl && s.accuracy_step == s.steps && s.steps > 0) {
    std::printf("test accuracy (greedy): after RL %.3f after %lld steps (not measured before RL: eval.before_rl is false)\n",
                s.accuracy_after_rl, static_cast<long long>(s.steps));
  } else if (s.accuracy_before_rl < 0) {
    std::printf("test accuracy (greedy): not measured before RL (%s)\n",
                c.eval.before_rl ? "the run stopped before RL" : "eval.before_rl is false");
  } else if (s.accuracy_step == s.steps && s.steps > 0) {
    std::printf("test accuracy (greedy): before RL %.3f -> after RL %.3f (%+.1f points) after %lld steps\n",
                s.accuracy_before_rl, s.accuracy_after_rl, 100.0 * (s.accuracy_after_rl - s.accuracy_before_rl),
                static_cast<long long>(s.steps));
  } else if (s.accuracy_step > 0) {
    std::printf("test accuracy (greedy): before RL %.3f, at step %lld %.3f; not measured after step %lld\n",
                s.accuracy_before_rl, static_cast<long long>(s.accuracy_step), s.accuracy_after_rl,
                static_cast<long long>(s.steps));
  } else {
    std::printf("test accuracy (greedy): before RL %.3f; not measured after RL (%lld steps)\n", s.accuracy_before_rl,
                static_cast<long long>(s.steps));
  }
}

// A resumed run that had done every step: nothing ran, and nothing given on the command line took effect.
void print_complete_run(const rl::TrainSummary& s, const rl::RunConfig& c,
                        const rl::ConfigOverrides& overrides) {
  const std::string& run = c.train.out_dir;
  std::printf("%s is complete: its checkpoint %s holds %lld RL steps (train.steps %lld); nothing to do\n",
              run.c_str(), s.checkpoint.c_str(), static_cast<long long>(s.steps),
              static_cast<long long>(c.train.steps));
  if (!overrides.empty()) std::printf("the overrides given were not applied and config.yaml is unchanged\n");
  std::printf("to train further: gtpo train --resume %s train.steps=%lld\n", run.c_str(),
              static_cast<long long>(s.steps + std::max<int64_t>(1, s.steps)));
}

// rl.algo and task.name choose the defaults of other keys (every rl.* key; the task's options), and the
// run's config.yaml holds the old choice's values for all of them: changing one on --resume would train a
// hybrid of the two without a word, so it is refused.
void refuse_default_choosing_changes(const rl::RunConfig& before, const rl::RunConfig& after,
                                     const std::string& config_path) {
  const std::optional<std::string> latest = rl::latest_checkpoint(after.train.out_dir);
  const std::string from = latest.value_or(after.train.out_dir + "/checkpoints/step-NNNNNN");
  const std::string restart = "; to train with it from this run's weights, start a new run: gtpo train " +
                              std::string("CONFIG train.init_from=") + from;
  GTPO_CHECK(before.rl.algo == after.rl.algo, "train --resume: rl.algo ", after.rl.algo,
             " differs from the run's ", before.rl.algo, " (", config_path,
             "): rl.algo chooses the defaults of every rl.* key and the run's config holds ", before.rl.algo,
             "'s, so a resume cannot change it", restart);
  GTPO_CHECK(before.task.name == after.task.name, "train --resume: task.name ", after.task.name,
             " differs from the run's ", before.task.name, " (", config_path,
             "): the task chooses the other task.* keys and the data cursor, so a resume cannot change it",
             restart);
}

// What a resume changes, and nothing else: the keys whose values differ from the run's config.yaml.
void print_resume_changes(const rl::RunConfig& before, const rl::RunConfig& after) {
  std::string changed;
  for (const ValueChange& c :
       yaml_value_changes(rl::resolved_config_yaml(before), rl::resolved_config_yaml(after)))
    changed += (changed.empty() ? "" : ", ") + c.key + " " + c.before + " -> " + c.after;
  std::fprintf(stderr, "resume: %s\n",
               changed.empty() ? "the run's settings, unchanged"
                               : ("changed from the run's config.yaml: " + changed).c_str());
}

// The config a train command reads: CONFIG, or with --resume RUN_DIR/config.yaml.
std::string train_config_path(const Args& args, bool resume) {
  if (!resume) {
    GTPO_CHECK(args.positionals().size() == 1, "train: expected one CONFIG.yaml (see --help)");
    return args.positionals()[0];
  }
  GTPO_CHECK(args.positionals().empty(),
             "train: with --resume, give no CONFIG (the run's config.yaml is used)");
  const std::string path = args.get("--resume", "") + "/config.yaml";
  GTPO_CHECK(std::filesystem::exists(path), "train --resume: ", path, " does not exist");
  return path;
}

// Locks the run directory (another process there is an error), then checks again under the lock that a new
// run starts in an empty one (two runs started at once cannot both pass the earlier check) or, with
// --overwrite, removes the old run's files.
io::FileLock take_run_directory(const std::string& out_dir, bool resume, bool overwrite) {
  io::FileLock lock = rl::lock_run_directory(out_dir);
  if (!resume && !overwrite) rl::require_fresh_run_directory(out_dir);
  if (!resume && !overwrite && rl::holds_failed_start(out_dir)) {
    std::fprintf(
        stderr,
        "note: train.out_dir %s holds only the logs of a start that ended before its first checkpoint "
        "(nothing to resume): they are replaced by this run's\n",
        out_dir.c_str());
    rl::clear_run_directory(out_dir);
  }
  if (overwrite) rl::clear_run_directory(out_dir);
  return lock;
}

void print_run_start(const rl::RunConfig& config, const RunObjects& run, int ranks) {
  std::fprintf(stderr, "gtpo train: %s on task %s, %s model with %lld parameters on %s%s -> %s\n",
               config.rl.algo.c_str(), run.source->name().c_str(),
               model::architecture_name(run.model->config().architecture),
               static_cast<long long>(run.model->parameters().numel()), device_name(run.model->device()),
               ranks > 1
                   ? (", " + std::to_string(ranks) + " data-parallel ranks (optimiser state sharded)").c_str()
                   : "",
               config.train.out_dir.c_str());
}

const std::vector<FlagSpec> kFlags = {
    {"--resume", true,
     "continue the run in this directory from its latest checkpoint, with its config.yaml (which keeps "
     "the overrides of earlier resumes; segments.jsonl lists them)"},
    {"--overwrite", false,
     "start over in a train.out_dir that holds an earlier run: removes that run's files first"},
    device_flag("train.device, cpu; same as train.device=VALUE")};

// One process's part of a run: its notes, the run directory's checks and lock (rank 0), the model, task and
// rewards, then the trainer. RUN_LOCK receives the lock so that it outlasts this call.
rl::TrainSummary set_up_and_train(const Args& args, rl::RunConfig& config, const std::string& config_path,
                                  const std::optional<rl::RunConfig>& before_resume, dist::Communicator& comm,
                                  std::optional<io::FileLock>& run_lock) {
  const bool resume = args.has("--resume"), writer = comm.writer();
  if (writer && before_resume) print_resume_changes(*before_resume, config);
  if (writer) print_config_notes(config);
  if (const std::string note = rl::reward_value_note(config); writer && !note.empty())
    std::fprintf(stderr, "note: %s\n", note.c_str());
  // A run directory belongs to one run: checked before anything else; with --overwrite the old run is removed
  // only once this run's setup has passed its checks (a bad config must not cost the old run).
  const bool overwrite = !resume && args.has("--overwrite");
  if (writer && !resume && !overwrite) rl::require_fresh_run_directory(config.train.out_dir);
  RunObjects run = build_run(config);
  if (writer) print_warnings(run);
  if (writer) run_lock.emplace(take_run_directory(config.train.out_dir, resume, overwrite));
  install_stop_handler();
  if (writer) print_run_start(config, run, comm.size());
  rl::Trainer trainer(*run.model, *run.tokenizer, *run.source, config, comm, run.teacher.get());
  return trainer.run({resume, config_path, args.overrides()});
}
}

int run_train(int argc, char** argv) {
  const auto started = std::chrono::steady_clock::now();
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo train CONFIG.yaml [section.key=value | ~section.key ...]\n       gtpo train --resume "
          "RUN_DIR [section.key=value ...]",
          "Trains with the algorithm of rl.algo: an optional supervised warm start (sft.steps), then\n"
          "RL steps of grouped rollouts, verification, shaped rewards and advantages, and clipped\n"
          "policy updates. Writes config.yaml, metrics.jsonl, eval.jsonl, samples.jsonl and\n"
          "checkpoints/ under train.out_dir, which must be empty or new (a run directory belongs to\n"
          "one run: --resume continues it, --overwrite starts over). SIGINT (^C) or SIGTERM stops\n"
          "after the current SFT or RL step with a checkpoint (exit status 130 or 143).\n"
          "mpirun -np N gtpo train ... runs N data-parallel ranks, each keeping 1/N of the optimiser\n"
          "state; a checkpoint resumes with any N (docs/distributed.md).\n"
          "Every key and its default: docs/configuration.md.\n\n"
          "Algorithms (rl.algo):\n" +
              algorithm_lines() + "\nPolicy losses (rl.policy_loss; the sequence-level algorithms' own):\n" +
              policy_loss_lines()))
    return 0;
  const bool resume = args.has("--resume");
  GTPO_CHECK(!(resume && args.has("--overwrite")), "train: --resume continues a run and --overwrite starts over: "
             "give one of them");
  const std::string config_path = train_config_path(args, resume);
  rl::ConfigOverrides overrides = args.overrides();
  if (resume) overrides.emplace_back("train.out_dir", args.get("--resume", ""));
  add_device_override(args, overrides);
  rl::RunConfig config = rl::load_run_config(config_path, overrides);
  std::optional<rl::RunConfig> before_resume;  // the run's own settings, to say what this resume changes
  if (resume)
    refuse_default_choosing_changes(before_resume.emplace(rl::load_run_config(config_path)), config,
                                    config_path);
  // Under mpirun: one data-parallel rank of several (every rank reads the same config and builds the same
  // model from the same seed or checkpoint); rank 0 alone touches the run directory. Otherwise one process.
  std::unique_ptr<dist::Communicator> comm =
      dist::make_device_communicator(config.train.collective_timeout_s, config.train.device == Device::cuda);
  std::optional<io::FileLock> run_lock;  // one process per run directory, from its set-up to the end
  rl::TrainSummary s;
  try {
    s = set_up_and_train(args, config, config_path, before_resume, *comm, run_lock);
  } catch (const std::exception& e) {
    // A stop request that ended a wait (a reward process's reply): the step was given up, the checkpoint
    // of the one before is written; the exit status is the signal's, as for any stop.
    if (comm->size() == 1 && rl::stop_requested()) {
      std::fprintf(stderr, "gtpo train: stopped by signal %d: %s\ncontinue with: gtpo train --resume %s\n",
                   rl::stop_signal(), e.what(), config.train.out_dir.c_str());
      return 128 + rl::stop_signal();
    }
    if (comm->size() == 1) throw;
    // Any rank's error, in its set-up (a run directory in use) or a step, ends every rank now: else they
    // wait.
    comm->abort(std::string(dynamic_cast<const Error*>(&e) ? "train: error: " : "train: internal error: ") +
                e.what());
  }
  if (!comm->writer()) return s.interrupted ? 128 + (s.stop_signal > 0 ? s.stop_signal : 2) : 0;
  if (s.already_complete) {
    print_complete_run(s, config, args.overrides());
    return 0;
  }
  print_train_summary(s, config);
  std::printf("checkpoint: %s\n", s.checkpoint.c_str());
  std::printf("wall time: %s\n", rl::format_duration(seconds_since(started)).c_str());
  if (!s.interrupted) return 0;
  std::printf("continue with: gtpo train --resume %s\n", config.train.out_dir.c_str());
  return 128 + (s.stop_signal > 0 ? s.stop_signal : 2);
}

}  // namespace gtpo::apps
