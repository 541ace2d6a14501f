#include "model/checkpoint.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "runtime/error.h"
#include "runtime/io/atomic_dir.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/safetensors.h"

namespace gtpo::model {

namespace {

constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kConfigFile = "config.yaml";
constexpr const char* kTokenizerFile = "tokenizer.json";

std::string join(const std::string& dir, const char* file) { return (std::filesystem::path(dir) / file).string(); }

std::string shape_text(const std::vector<int64_t>& dims) { return Shape(dims).str(); }

// Tensors that Hugging Face files may hold beyond the parameters: GPT-2's causal-mask buffers, and a
// written-out copy of a tied head.
bool ignorable_extra(const std::string& name, const Transformer& model) {
  auto ends_with = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  if (ends_with(".attn.bias") || ends_with(".attn.masked_bias")) return model.config().is_gpt2();
  return name == "lm_head.weight" && model.config().tie_word_embeddings;
}

}  // namespace

void add_weights(io::SafetensorsWriter& writer, const Transformer& model) {
  for (const optim::Parameter& p : model.parameters()) {
    std::vector<float> values = p.tensor.to_vector();
    for (float v : values)
      GTPO_CHECK(std::isfinite(v), "refusing to save tensor '", p.name, "': it holds ", v,
                 " (non-finite weights: the model has diverged)");
    writer.add_f32(p.name, p.tensor.shape().dims(), values);
  }
}

void load_weights(Transformer& model, const io::SafetensorsFile& file, const std::string& label) {
  std::set<std::string> used;
  for (const optim::Parameter& p : model.parameters()) {
    // GPT2Model files (as on the Hugging Face hub) omit GPT2LMHeadModel's "transformer." prefix.
    const io::SafetensorsEntry* entry = file.find(p.name);
    std::string found = p.name;
    if (!entry && p.name.rfind("transformer.", 0) == 0) {
      found = p.name.substr(12);
      entry = file.find(found);
    }
    GTPO_CHECK(entry != nullptr, label, ": tensor '", p.name, "' is missing (expected F32 ",
               p.tensor.shape().str(), " for this ", architecture_name(model.config().architecture), " config)");
    GTPO_CHECK(entry->shape == p.tensor.shape().dims(), label, ": tensor '", p.name, "' has shape ",
               shape_text(entry->shape), ", expected ", p.tensor.shape().str(), " from config.yaml");
    GTPO_CHECK(entry->dtype == "F32" || entry->dtype == "F16" || entry->dtype == "BF16", label, ": tensor '",
               p.name, "' has dtype ", entry->dtype, ", expected F32 (or F16/BF16, widened to f32)");
    std::vector<float> values = file.read_f32(found);
    for (size_t i = 0; i < values.size(); ++i)
      GTPO_CHECK(std::isfinite(values[i]), label, ": tensor '", p.name, "' holds a non-finite value (", values[i],
                 " at element ", i, "): the checkpoint was saved from a diverged run");
    p.tensor.copy_(Tensor::from_vector(values, p.tensor.shape()));
    used.insert(found);
  }
  for (const io::SafetensorsEntry& e : file.entries())
    GTPO_CHECK(used.count(e.name) || ignorable_extra(e.name, model), label, ": unexpected tensor '", e.name,
               "' (", e.dtype, " ", shape_text(e.shape), "): this ", architecture_name(model.config().architecture),
               " config has no such parameter");
}

bool is_checkpoint_file(const std::string& name) {
  static const std::set<std::string> names = {kWeightsFile,      kConfigFile,  kTokenizerFile,
                                              "run_config.yaml", "state.json", "optimizer.safetensors",
                                              "reference.safetensors"};
  return names.count(name) != 0;
}

void check_replaceable_checkpoint(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return;
  GTPO_CHECK(std::filesystem::is_directory(dir, ec), what, " '", dir, "' exists and is not a directory");
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    GTPO_CHECK(e.is_regular_file() && is_checkpoint_file(name), what, " '", dir, "' holds '", name,
               "', which is not a checkpoint file: not replacing it (choose a new directory or remove it)");
  }
}

void save_model(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                const std::string& extra_yaml, const std::vector<ExtraFile>& extra_files) {
  check_replaceable_checkpoint(dir, "checkpoint directory");
  io::write_directory_atomic(dir, [&](const std::string& tmp) {
    save_model_files(tmp, model, tokenizer, extra_yaml);
    for (const ExtraFile& f : extra_files) io::write_file_atomic(join(tmp, f.name.c_str()), f.content);
  });
}

void save_model_files(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                      const std::string& extra_yaml) {
  io::make_directories(dir);
  io::SafetensorsWriter writer;
  add_weights(writer, model);
  writer.set_metadata("format", "pt");
  writer.set_metadata("gtpo_architecture", architecture_name(model.config().architecture));
  writer.write(join(dir, kWeightsFile));
  std::string yaml = "# gtpo checkpoint: model.safetensors holds Hugging Face names and layouts\n";
  yaml += model_config_to_yaml(model.config());
  if (tokenizer) {
    tokenizer->save(join(dir, kTokenizerFile));
    yaml += "tokenizer:\n  file: " + std::string(kTokenizerFile) + "\n  kind: " + tokenizer->kind() + "\n";
  }
  yaml += extra_yaml;
  io::write_file_atomic(join(dir, kConfigFile), yaml);
}

LoadedModel load_model(const std::string& requested_dir, Device device) {
  const std::string dir = io::readable_directory(requested_dir);
  GTPO_CHECK(std::filesystem::is_directory(dir), "checkpoint '", dir, "' is not a directory");
  const std::string config_path = join(dir, kConfigFile);
  GTPO_CHECK(std::filesystem::exists(config_path), "checkpoint '", dir, "': ", kConfigFile,
             " is missing (a gtpo checkpoint holds model.safetensors, config.yaml and the tokenizer file)");
  YAML::Node root;
  try {
    root = YAML::Load(io::read_file(config_path));
  } catch (const YAML::Exception& e) {
    fail(config_path, ": invalid YAML at line ", e.mark.line + 1, ": ", e.msg);
  }
  GTPO_CHECK(root.IsMap() && root["model"], config_path, ": no 'model:' section");
  LoadedModel out;
  out.model = std::make_unique<Transformer>(parse_model_config(root["model"], config_path), device);
  const std::string weights_path = join(dir, kWeightsFile);
  GTPO_CHECK(std::filesystem::exists(weights_path), "checkpoint '", dir, "': ", kWeightsFile, " is missing");
  load_weights(*out.model, io::SafetensorsFile::load(weights_path), weights_path);
  if (root["tokenizer"] && root["tokenizer"].IsMap() && root["tokenizer"]["file"]) {
    const std::string file = root["tokenizer"]["file"].as<std::string>();
    out.tokenizer = data::load_tokenizer((std::filesystem::path(dir) / file).string());
    GTPO_CHECK(out.tokenizer->vocab_size() <= out.model->config().vocab_size, config_path, ": the tokenizer has ",
               out.tokenizer->vocab_size(), " tokens but model.vocab_size is ", out.model->config().vocab_size);
  }
  return out;
}

}  // namespace gtpo::model
