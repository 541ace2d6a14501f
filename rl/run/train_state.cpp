#include "rl/run/train_state.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <utility>
#include <vector>

#include "model/checkpoint.h"
#include "runtime/error.h"
#include "runtime/io/atomic_dir.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "runtime/io/input_file.h"
#include "runtime/io/json_parse.h"
#include "runtime/io/safetensors.h"

namespace gtpo::rl {

namespace fs = std::filesystem;

namespace {
std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%06lld", static_cast<long long>(step));
  return buf;
}
}  // namespace

std::string save_train_checkpoint(const std::string& run_dir, const model::Transformer& model,
                                  const data::Tokenizer& tokenizer,
                                  const std::vector<optim::AdamWFullState>& optimizer,
                                  const model::Transformer* reference, const TrainProgress& progress,
                                  const std::string& run_config_yaml) {
  const fs::path root = fs::path(run_dir) / "checkpoints";
  const fs::path final_dir = root / step_name(progress.step);
  // Never skipped when a directory of that name exists: it is replaced, so what is on disk is this state.
  io::write_directory_atomic(final_dir.string(), [&](const std::string& tmp) {
    const fs::path tmp_dir = tmp;
    model::save_model_files(tmp, model, &tokenizer);
    if (!run_config_yaml.empty())
      io::write_file_atomic((tmp_dir / "run_config.yaml").string(), run_config_yaml);

    io::SafetensorsWriter opt;
    for (const optim::AdamWFullState& s : optimizer) {
      opt.add_f32("exp_avg." + s.name, s.shape.dims(), s.exp_avg);
      opt.add_f32("exp_avg_sq." + s.name, s.shape.dims(), s.exp_avg_sq);
      opt.set_metadata("step." + s.name, std::to_string(s.step));
    }
    opt.write((tmp_dir / "optimizer.safetensors").string());
    if (reference) {
      io::SafetensorsWriter ref;
      model::add_weights(ref, *reference);
      ref.write((tmp_dir / "reference.safetensors").string());
    }
    nlohmann::json state = {{"step", progress.step},         {"cursor", progress.cursor},
                            {"seed", progress.seed},         {"sft_done", progress.sft_done},
                            {"sft_step", progress.sft_step}, {"start_accuracy", progress.start_accuracy}};
    if (progress.entropy_coef) state["entropy_coef"] = *progress.entropy_coef;  // JSON keeps a double's bits
    io::write_file_atomic((tmp_dir / "state.json").string(), state.dump(2) + "\n");
    io::write_directory_digests(tmp);
  });
  io::write_file_atomic((root / "latest").string(), step_name(progress.step) + "\n");
  return final_dir.string();
}

void prune_checkpoints(const std::string& run_dir, int64_t keep) {
  GTPO_CHECK(keep >= 1, "prune_checkpoints: keep must be at least 1, got ", keep);
  const fs::path root = fs::path(run_dir) / "checkpoints";
  if (!fs::is_directory(root)) return;
  const std::optional<std::string> latest = latest_checkpoint(run_dir);
  const std::string latest_name = latest ? fs::path(*latest).filename().string() : std::string();
  std::vector<std::pair<int64_t, fs::path>> steps;
  std::vector<fs::path> leftovers;
  static const std::regex step_dir("step-([0-9]{6,})");
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, step_dir))
      steps.emplace_back(std::stoll(m[1].str()), entry.path());
    else if (name.size() > 9 && name.ends_with(".deleting"))
      leftovers.push_back(entry.path());
  }
  std::sort(steps.begin(), steps.end());
  const size_t n_delete =
      steps.size() > static_cast<size_t>(keep) ? steps.size() - static_cast<size_t>(keep) : 0;
  for (size_t i = 0; i < n_delete; ++i) {
    if (steps[i].second.filename() == latest_name) continue;
    const fs::path doomed = steps[i].second.string() + ".deleting";
    fs::rename(steps[i].second, doomed);
    leftovers.push_back(doomed);
  }
  for (const fs::path& dir : leftovers) fs::remove_all(dir);
}

std::optional<std::string> latest_checkpoint(const std::string& run_dir) {
  const fs::path latest = fs::path(run_dir) / "checkpoints" / "latest";
  if (!fs::exists(latest)) return std::nullopt;
  std::string name = io::read_file(latest.string());
  while (!name.empty() && (name.back() == '\n' || name.back() == ' ')) name.pop_back();
  const fs::path dir = io::readable_directory((latest.parent_path() / name).string());
  GTPO_CHECK(fs::is_directory(dir), latest.string(), " names '", name,
             "', which is not a checkpoint directory");
  return dir.string();
}

TrainProgress read_train_progress(const std::string& dir) {
  const std::string state_path = (fs::path(dir) / "state.json").string();
  GTPO_CHECK(fs::exists(state_path), "checkpoint '", dir,
             "' has no state.json: it is a model checkpoint, not a ", "training checkpoint");
  io::check_input_file(state_path, io::kMaxConfigBytes, "training state");
  const nlohmann::json state =
      io::parse_json_or_fail(io::read_file(state_path), state_path + ": invalid JSON: ");
  TrainProgress p;
  try {
    p.step = state.at("step").get<int64_t>();
    p.cursor = state.at("cursor").get<uint64_t>();
    p.seed = state.at("seed").get<uint64_t>();
    p.sft_done = state.at("sft_done").get<bool>();
    p.start_accuracy = state.at("start_accuracy").get<double>();
    p.sft_step = state.value("sft_step", int64_t{0});  // absent in checkpoints written before it existed
    if (state.contains("entropy_coef")) p.entropy_coef = state.at("entropy_coef").get<double>();
  } catch (const nlohmann::json::exception& e) {
    fail(state_path, ": ", e.what());
  }
  return p;
}

void load_optimizer_state(const std::string& dir, optim::AdamW& optimizer) {
  const std::string opt_path = (fs::path(dir) / "optimizer.safetensors").string();
  io::SafetensorsFile opt = io::SafetensorsFile::load(opt_path);
  optimizer.clear_state();
  for (const optim::Parameter& param : optimizer.parameters()) {
    const io::SafetensorsEntry* m = opt.find("exp_avg." + param.name);
    if (!m) continue;  // no state yet: the parameter never had a gradient
    const auto step_it = opt.metadata().find("step." + param.name);
    GTPO_CHECK(step_it != opt.metadata().end(), opt_path, ": no step count for '", param.name, "'");
    const Shape shape = param.tensor.shape();
    GTPO_CHECK(m->shape == shape.dims(), opt_path, ": 'exp_avg.", param.name, "' has shape ", Shape(m->shape),
               ", expected ", shape);
    optimizer.set_state(param.name, std::stoll(step_it->second),
                        Tensor::from_vector(opt.read_f32("exp_avg." + param.name), shape),
                        Tensor::from_vector(opt.read_f32("exp_avg_sq." + param.name), shape));
  }
}

void load_reference_weights(const std::string& dir, model::Transformer& reference) {
  const std::string ref_path = (fs::path(dir) / "reference.safetensors").string();
  GTPO_CHECK(fs::exists(ref_path), "checkpoint '", dir,
             "' has no reference.safetensors but rl.kl_coef is set");
  model::load_weights(reference, io::SafetensorsFile::load(ref_path), ref_path);
}

}  // namespace gtpo::rl
