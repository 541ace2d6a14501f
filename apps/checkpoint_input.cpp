#include "apps/checkpoint_input.h"

#include <omp.h>

#include <cstdio>
#include <filesystem>

#include "rl/run/run_checks.h"
#include "rl/run/train_state.h"
#include "runtime/error.h"
#include "runtime/io/atomic_dir.h"

namespace gtpo::apps {

namespace fs = std::filesystem;

std::string resolve_checkpoint_dir(const std::string& path) {
  if (fs::exists(fs::path(path) / "checkpoints" / "latest")) return *rl::latest_checkpoint(path);
  // RUN/checkpoints/latest itself: the file that names the newest checkpoint.
  const fs::path given(path);
  if (given.filename() == "latest" && given.parent_path().filename() == "checkpoints" &&
      fs::is_regular_file(given))
    return *rl::latest_checkpoint(given.parent_path().parent_path().string());
  const bool run_dir = fs::exists(fs::path(path) / "metrics.jsonl") || fs::is_directory(fs::path(path) / "checkpoints");
  GTPO_CHECK(!run_dir || fs::exists(fs::path(path) / "model.safetensors"), "'", path,
             "' is a run directory without a finished checkpoint (checkpoints/latest is missing)");
  return path;
}

void require_model_directory(const std::string& path, const std::string& key) {
  std::error_code ec;
  GTPO_CHECK(fs::exists(path, ec), key, " '", path,
             "' does not exist (expected a directory: a gtpo checkpoint, a run directory or a Hugging Face "
             "model saved by save_pretrained)");
  GTPO_CHECK(fs::is_directory(path, ec), key, " '", path,
             "' is not a directory (expected a gtpo checkpoint, a run directory or a Hugging Face model "
             "directory)");
}

CheckpointInput load_checkpoint_input(const Args& args, Device device, const char* command) {
  CheckpointInput in;
  in.dir = io::readable_directory(resolve_checkpoint_dir(args.require("--checkpoint")));
  in.loaded = model::load_model(in.dir, device);
  const std::string run_config_path = (fs::path(in.dir) / "run_config.yaml").string();
  if (fs::exists(run_config_path)) {
    in.run_config = rl::load_run_config(run_config_path);
    std::fprintf(stderr, "%s: %s, with the run config it was trained with (%s; flags override it)\n", command,
                 in.dir.c_str(), run_config_path.c_str());
  }
  if (in.loaded.tokenizer)
    rl::check_tokenizer_fits(*in.loaded.tokenizer, "the checkpoint's tokenizer.json", in.loaded.model->config().vocab_size,
                             "the checkpoint's model.vocab_size");
  return in;
}

FlagSpec threads_flag() { return {"--threads", true, "CPU threads (default 0 = the library default)"}; }

void apply_threads(const Args& args) {
  const int64_t threads = args.get_int("--threads", 0, 0, 4096);
  if (threads > 0) omp_set_num_threads(static_cast<int>(threads));
}

FlagSpec checkpoint_flag() {
  return {"--checkpoint", true,
          "checkpoint directory (gtpo's, or a Hugging Face save_pretrained one), or a run directory (its latest "
          "checkpoint); a training checkpoint's run config gives the defaults (required)"};
}

}  // namespace gtpo::apps
