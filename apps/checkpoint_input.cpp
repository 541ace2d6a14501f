#include "apps/checkpoint_input.h"

#include <omp.h>

#include <cstdio>
#include <filesystem>

#include "apps/device_setup.h"
#include "data/tokenizer/tokenizer_config.h"
#include "rl/prompt_template.h"
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

CheckpointInput load_checkpoint_input(const Args& args, const char* command) {
  if (const int64_t threads = args.get_int("--threads", 0, 0, 4096); threads > 0)
    omp_set_num_threads(static_cast<int>(threads));
  const Device device = device_from(args);
  prepare_device(device);
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

FlagSpec chat_template_flag() {
  return {
      "--chat-template", true,
      "how prompts become model text: auto (default: the run's prompt.template, else the directory's chat "
      "template, as transformers' pipeline does), none (as given), tokenizer, a Jinja file or a {prompt} "
      "pattern"};
}

std::string chosen_prompt_template(const Args& args, const CheckpointInput& in, const char* command) {
  const std::string flag = args.get("--chat-template", "auto");
  std::string chosen, why;
  if (flag != "auto") {
    chosen = flag == "none" ? "" : flag;
    why = "--chat-template " + flag;
  } else if (in.run_config) {
    chosen = in.run_config->prompt.template_path_or_pattern;
    why = "the run's prompt.template";
  } else {
    const std::optional<data::TokenizerConfig> config = data::read_tokenizer_config_in(in.dir);
    chosen = config && !config->chat_template.empty() ? rl::kTokenizerTemplate : "";
    why = chosen.empty() ? "the directory has no chat template" : "the directory's chat template";
  }
  const std::string how = chosen.empty() ? "as given"
                          : chosen == rl::kTokenizerTemplate
                              ? "through the tokenizer's chat template, as one user turn"
                              : "through " + chosen;
  std::fprintf(stderr, "%s: prompts %s (%s%s)\n", command, how.c_str(), why.c_str(),
               chosen.empty() ? "" : "; --chat-template none: as given");
  return chosen;
}

FlagSpec threads_flag() { return {"--threads", true, "CPU threads (default 0 = the library default)"}; }

FlagSpec checkpoint_flag() {
  return {"--checkpoint", true,
          "checkpoint directory (gtpo's, or a Hugging Face save_pretrained one), or a run directory (its latest "
          "checkpoint); a training checkpoint's run config gives the defaults (required)"};
}

}  // namespace gtpo::apps
