#include "model/checkpoint.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "data/tokenizer/tokenizer_config.h"
#include "model/hf_config.h"
#include "runtime/error.h"
#include "runtime/io/atomic_dir.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "runtime/io/input_file.h"
#include "runtime/io/json_parse.h"
#include "runtime/io/safetensors.h"
#include "runtime/io/yaml_config.h"

namespace gtpo::model {

namespace {

constexpr const char* kWeightsFile = "model.safetensors";
constexpr const char* kConfigFile = "config.yaml";
constexpr const char* kTokenizerFile = "tokenizer.json";
constexpr const char* kTokenizerConfigFile = "tokenizer_config.json";
constexpr const char* kHfConfigFile = "config.json";
constexpr const char* kGenerationConfigFile = "generation_config.json";
constexpr const char* kShardIndexFile = "model.safetensors.index.json";

std::string join(const std::string& dir, const char* file) { return (std::filesystem::path(dir) / file).string(); }

// A checkpoint's JSON or YAML file read whole, within the configs' size limit (docs/reliability.md).
std::string read_config_file(const std::string& path) {
  io::check_input_file(path, io::kMaxConfigBytes, "checkpoint file");
  return io::read_file(path);
}

std::string shape_text(const std::vector<int64_t>& dims) { return Shape(dims).str(); }

// Eos ids in order, each once: OUT's, then MORE's not already there (the tokenizer's first, then
// generation_config.json's, then config.json's).
std::vector<int32_t> merge_ids(std::vector<int32_t> out, const std::vector<int32_t>& more) {
  for (int32_t id : more)
    if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
  return out;
}

// Tensors that Hugging Face files may hold beyond the parameters: GPT-2's causal-mask buffers, and a
// written-out copy of a tied head.
bool ignorable_extra(const std::string& name, const Transformer& model) {
  if (name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias")) return model.config().is_gpt2();
  return name == "lm_head.weight" && model.config().tie_word_embeddings;
}

// A tied model's head is its embedding; a file that also holds lm_head.weight must hold that same matrix,
// or gtpo (the embedding) and transformers (which loads the file's head) would compute different models.
void check_tied_head_copy(const Transformer& model, const io::SafetensorsFile& file,
                          const io::SafetensorsEntry& head) {
  const std::string name = model.config().is_gpt2() ? "transformer.wte.weight" : "model.embed_tokens.weight";
  const Tensor embedding = model.parameters().get(name);
  const std::vector<int64_t> dims = embedding.shape().dims();
  GTPO_CHECK(head.shape == dims, file.label(), ": tensor 'lm_head.weight' has shape ", shape_text(head.shape),
             " but tie_word_embeddings is true, so the head is '", name, "' ", shape_text(dims),
             ": set tie_word_embeddings false to use the file's head, or remove it from the file");
  std::vector<float> values(static_cast<size_t>(embedding.numel()));
  file.read_f32_into("lm_head.weight", values);
  const std::vector<float> tied = embedding.to_vector();
  for (size_t i = 0; i < values.size(); ++i)
    GTPO_CHECK(
        values[i] == tied[i], file.label(), ": tensor 'lm_head.weight' differs from '", name, "' (element ",
        i, ": ", values[i], " against ", tied[i], ") but tie_word_embeddings is true, so gtpo ",
        "would use the embedding as the head while transformers loads the file's: set tie_word_embeddings ",
        "false in the config to use the file's head, or remove lm_head.weight from the file");
}

}  // namespace

void add_weights(io::SafetensorsWriter& writer, const Transformer& model, const std::string& store_as) {
  for (const optim::Parameter& p : model.parameters()) {
    std::vector<float> values = p.tensor.to_vector();
    for (float v : values)
      GTPO_CHECK(std::isfinite(v), "refusing to save tensor '", p.name, "': it holds ", v,
                 " (non-finite weights: the model has diverged)");
    writer.add_f32(p.name, p.tensor.shape().dims(), values, store_as);
  }
}

void load_weights(Transformer& model, const io::SafetensorsFile& file, const std::string& label) {
  std::vector<io::SafetensorsFile> files{file};
  load_weights(model, files, label);
}

void load_weights(Transformer& model, const std::vector<io::SafetensorsFile>& files, const std::string& label) {
  // Which file holds each tensor; a name in two shards is an error (which copy would be meant?).
  std::map<std::string, std::pair<const io::SafetensorsFile*, const io::SafetensorsEntry*>> where;
  for (const io::SafetensorsFile& f : files)
    for (const io::SafetensorsEntry& e : f.entries()) {
      const auto [it, fresh] = where.emplace(e.name, std::make_pair(&f, &e));
      GTPO_CHECK(fresh, label, ": tensor '", e.name, "' is in both ", it->second.first->label(), " and ", f.label());
    }
  const auto find = [&](const std::string& name) -> std::pair<const io::SafetensorsFile*, const io::SafetensorsEntry*> {
    auto it = where.find(name);
    return it == where.end() ? std::make_pair(nullptr, nullptr) : it->second;
  };
  std::set<std::string> used;
  for (const optim::Parameter& p : model.parameters()) {
    // GPT2Model files (as on the Hugging Face hub) omit GPT2LMHeadModel's "transformer." prefix.
    auto [file, entry] = find(p.name);
    std::string found = p.name;
    if (!entry && p.name.rfind("transformer.", 0) == 0) {
      found = p.name.substr(12);
      std::tie(file, entry) = find(found);
    }
    GTPO_CHECK(entry != nullptr, label, ": tensor '", p.name, "' is missing (expected F32 ",
               p.tensor.shape().str(), " for this ", architecture_name(model.config().architecture), " config)");
    GTPO_CHECK(entry->shape == p.tensor.shape().dims(), file->label(), ": tensor '", p.name, "' has shape ",
               shape_text(entry->shape), ", expected ", p.tensor.shape().str(), " from the model config");
    GTPO_CHECK(entry->dtype == "F32" || entry->dtype == "F16" || entry->dtype == "BF16", file->label(), ": tensor '",
               p.name, "' has dtype ", entry->dtype, ", expected F32 (or F16/BF16, widened to f32)");
    // Converted from the mapped file straight into the parameter (or a host staging tensor for a device):
    // no whole-file copy and no second host copy of the tensor.
    const bool direct = p.tensor.device() == Device::cpu;
    Tensor host = direct ? p.tensor : Tensor::empty(p.tensor.shape());
    const std::span<float> values(host.mutable_data(), static_cast<size_t>(host.numel()));
    file->read_f32_into(found, values);
    for (size_t i = 0; i < values.size(); ++i)
      GTPO_CHECK(std::isfinite(values[i]), file->label(), ": tensor '", p.name, "' holds a non-finite value (",
                 values[i], " at element ", i, "): the checkpoint was saved from a diverged run");
    if (!direct) p.tensor.copy_(host);
    used.insert(found);
  }
  for (const auto& [name, located] : where)
    GTPO_CHECK(used.count(name) || ignorable_extra(name, model), located.first->label(), ": unexpected tensor '",
               name, "' (", located.second->dtype, " ", shape_text(located.second->shape), "): this ",
               architecture_name(model.config().architecture), " config has no such parameter");
  if (model.config().tie_word_embeddings) {
    const auto [file, entry] = find("lm_head.weight");
    if (entry != nullptr) check_tied_head_copy(model, *file, *entry);
  }
}

std::vector<io::SafetensorsFile> open_weight_files(const std::string& dir, std::string* label) {
  const std::string single = join(dir, kWeightsFile), index_path = join(dir, kShardIndexFile);
  std::vector<io::SafetensorsFile> files;
  if (std::filesystem::exists(single)) {
    *label = single;
    files.push_back(io::SafetensorsFile::load(single));
    return files;
  }
  GTPO_CHECK(std::filesystem::exists(index_path), "checkpoint '", dir, "': neither ", kWeightsFile, " nor ",
             kShardIndexFile, " (sharded weights) is present");
  *label = index_path;
  nlohmann::json index =
      io::parse_json_or_fail(read_config_file(index_path), index_path + ": not valid JSON: ");
  GTPO_CHECK(index.is_object() && index.contains("weight_map") && index["weight_map"].is_object(), index_path,
             ": key 'weight_map' (a mapping of tensor names to shard files) is missing");
  std::map<std::string, size_t> shard_of_file;
  std::vector<std::pair<std::string, std::string>> wanted;  // tensor, shard
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    GTPO_CHECK(shard.is_string(), index_path, ": key 'weight_map.", tensor, "': expected a file name, got ", shard.dump());
    const std::string name = shard.get<std::string>();
    GTPO_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..", index_path,
               ": key 'weight_map.", tensor, "' names '", name, "', which is not a file of this directory");
    if (!shard_of_file.count(name)) {
      const std::string path = join(dir, name.c_str());
      GTPO_CHECK(std::filesystem::exists(path), index_path, ": key 'weight_map.", tensor, "' names shard '", name,
                 "', which is missing from ", dir);
      shard_of_file[name] = files.size();
      files.push_back(io::SafetensorsFile::load(path));
    }
    wanted.emplace_back(tensor, name);
  }
  for (const auto& [tensor, shard] : wanted)
    GTPO_CHECK(files[shard_of_file[shard]].find(tensor) != nullptr, index_path, ": key 'weight_map.", tensor,
               "' names shard '", shard, "', which has no tensor '", tensor, "'");
  return files;
}

bool is_checkpoint_file(const std::string& name) {
  static const std::set<std::string> names = {kWeightsFile,
                                              kConfigFile,
                                              kTokenizerFile,
                                              kHfConfigFile,
                                              kGenerationConfigFile,
                                              kShardIndexFile,
                                              "run_config.yaml",
                                              "state.json",
                                              "optimizer.safetensors",
                                              "reference.safetensors",
                                              kTokenizerConfigFile,
                                              "special_tokens_map.json",
                                              "chat_template.jinja",
                                              io::kDigestFile};
  // Shards as save_pretrained names them: model-00001-of-00002.safetensors.
  const bool shard = name.rfind("model-", 0) == 0 && name.size() > 12 && name.substr(name.size() - 12) == ".safetensors";
  return names.count(name) != 0 || shard;
}

void check_replaceable_checkpoint(const std::string& dir, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) return;
  GTPO_CHECK(std::filesystem::is_directory(dir, ec), what, " '", dir, "' exists and is not a directory");
  // The trainer writes its checkpoints itself; no other writer may replace one: its optimizer state and
  // state.json are what train --resume continues from.
  for (const char* state : {"state.json", "optimizer.safetensors"})
    GTPO_CHECK(!std::filesystem::exists(std::filesystem::path(dir) / state, ec), what, " '", dir,
               "' is a training checkpoint (it holds ", state,
               ", which train --resume continues from): not replacing it (choose a new directory)");
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
    io::write_directory_digests(tmp);
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
  write_hf_config_files(dir, model, tokenizer);
  std::string yaml = "# gtpo checkpoint: model.safetensors holds Hugging Face names and layouts\n";
  yaml += model_config_to_yaml(model.config());
  if (tokenizer) {
    write_tokenizer_files(dir, *tokenizer, model.config().max_position_embeddings);
    yaml += "tokenizer:\n  file: " + std::string(kTokenizerFile) + "\n  kind: " + tokenizer->kind() + "\n";
  }
  yaml += extra_yaml;
  io::write_file_atomic(join(dir, kConfigFile), yaml);
}

void write_tokenizer_files(const std::string& dir, const data::Tokenizer& tokenizer, int64_t model_max_length) {
  tokenizer.save(join(dir, kTokenizerFile));
  data::write_tokenizer_config(tokenizer, join(dir, kTokenizerConfigFile),
                               model_max_length > 0 ? std::optional<int64_t>(model_max_length) : std::nullopt);
}

void write_hf_config_files(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                           const std::string& torch_dtype) {
  int32_t bos = model.bos_token_id();
  std::vector<int32_t> eos;
  if (tokenizer && tokenizer->eos_id() >= 0) eos.push_back(tokenizer->eos_id());
  eos = merge_ids(std::move(eos), model.eos_token_ids());
  if (bos < 0 && tokenizer) bos = tokenizer->bos_id();
  io::write_file_atomic(join(dir, kHfConfigFile), hf_config_json(model.config(), bos, eos, torch_dtype));
  io::write_file_atomic(join(dir, kGenerationConfigFile), hf_generation_config_json(bos, eos));
}

namespace {

// The model's bos / eos ids: the tokenizer's, generation_config.json's (when present) and FROM_CONFIG's.
void attach_special_tokens(LoadedModel& out, const std::string& dir, const HfModelConfig& from_config) {
  std::vector<int32_t> eos;
  int32_t bos = from_config.bos_token_id;
  if (out.tokenizer && out.tokenizer->eos_id() >= 0) eos.push_back(out.tokenizer->eos_id());
  const std::string generation_path = join(dir, kGenerationConfigFile);
  if (std::filesystem::exists(generation_path)) {
    const GenerationIds ids = parse_generation_config(read_config_file(generation_path), generation_path);
    eos = merge_ids(eos, ids.eos_token_ids);
    if (ids.bos_token_id >= 0) bos = ids.bos_token_id;
  }
  eos = merge_ids(eos, from_config.eos_token_ids);
  if (bos < 0 && out.tokenizer) bos = out.tokenizer->bos_id();
  // An id past the vocabulary (GPT-2's 50256 in a model cut to a smaller vocabulary) can never be sampled,
  // so it ends nothing; transformers loads such a directory too. Said once, not refused.
  const int64_t V = out.model->config().vocab_size;
  std::vector<int32_t> reachable;
  for (int32_t id : eos) {
    if (id >= 0 && id < V)
      reachable.push_back(id);
    else
      std::fprintf(stderr,
                   "%s: eos token id %d is not below vocab_size %lld: it can never be sampled, so it ends "
                   "no response (transformers loads it alike)\n",
                   dir.c_str(), id, static_cast<long long>(V));
  }
  out.model->set_special_tokens(bos, std::move(reachable));
}

LoadedModel load_hf_model(const std::string& dir, Device device) {
  const std::string config_path = join(dir, kHfConfigFile);
  const HfModelConfig hf = parse_hf_config(read_config_file(config_path), config_path);
  LoadedModel out;
  out.model = std::make_unique<Transformer>(hf.config, device);
  std::string label;
  const std::vector<io::SafetensorsFile> files = open_weight_files(dir, &label);
  load_weights(*out.model, files, label);
  const std::string tokenizer_path = join(dir, kTokenizerFile);
  if (std::filesystem::exists(tokenizer_path)) {
    out.tokenizer = data::load_tokenizer(tokenizer_path);
    GTPO_CHECK(out.tokenizer->vocab_size() <= hf.config.vocab_size, tokenizer_path, ": the tokenizer has ",
               out.tokenizer->vocab_size(), " tokens but ", config_path, " gives vocab_size ", hf.config.vocab_size);
  }
  attach_special_tokens(out, dir, hf);
  return out;
}

}  // namespace

LoadedModel load_model(const std::string& requested_dir, Device device) {
  const std::string dir = io::readable_directory(requested_dir);
  GTPO_CHECK(std::filesystem::is_directory(dir), "checkpoint '", dir, "' is not a directory");
  io::verify_directory_digests(dir);
  const std::string config_path = join(dir, kConfigFile);
  const std::string hf_config_path = join(dir, kHfConfigFile);
  if (!std::filesystem::exists(config_path)) {
    GTPO_CHECK(std::filesystem::exists(hf_config_path), "checkpoint '", dir, "': neither ", kConfigFile,
               " (a gtpo checkpoint) nor ", kHfConfigFile, " (a Hugging Face model directory) is present");
    return load_hf_model(dir, device);
  }
  const YAML::Node root = io::load_yaml(read_config_file(config_path), config_path);
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
  attach_special_tokens(out, dir, {});
  return out;
}

}  // namespace gtpo::model
