// Model checkpoints: a directory holding model.safetensors (Hugging Face names and layouts), config.json and
// generation_config.json (so transformers' from_pretrained loads it), config.yaml (gtpo's model + tokenizer
// sections) and the tokenizer file. Hugging Face directories as save_pretrained writes them (config.json,
// model.safetensors or shards with model.safetensors.index.json) load too. See docs/checkpoint-format.md.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"

namespace gtpo::io {
class SafetensorsFile;
class SafetensorsWriter;
}  // namespace gtpo::io

namespace gtpo::model {

struct LoadedModel {
  std::unique_ptr<Transformer> model;  // carries the files' bos / eos ids (Transformer::eos_token_ids)
  std::unique_ptr<data::Tokenizer> tokenizer;  // null when the checkpoint has none
};

// Writes the checkpoint directory as a whole, atomically (io::write_directory_atomic: a temporary directory,
// fsync, renames), so a kill at any moment leaves the old checkpoint or the new one, never a mix. An existing
// DIR is replaced only when it is a checkpoint (it holds nothing but checkpoint files; see
// is_checkpoint_file) or empty; anything else is an error and left alone. Extra files (name, content) go
// into the same directory; extra YAML text (already indented as top-level sections) is appended to
// config.yaml.
struct ExtraFile {
  std::string name, content;
};
void save_model(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                const std::string& extra_yaml = "", const std::vector<ExtraFile>& extra_files = {});
// Writes the model's files into DIR, which exists; for writers that build a larger directory atomically.
void save_model_files(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                      const std::string& extra_yaml = "");
// Loads a checkpoint; a replacement killed half-way is read from its complete copy (io::readable_directory).
// The model comes from config.yaml when present (gtpo's own), else from config.json (Hugging Face); weights
// from model.safetensors or the shards model.safetensors.index.json names, mapped rather than read whole.
// The model's eos ids are the tokenizer's, generation_config.json's and config.json's. Non-finite weights
// are an error naming the tensor.
LoadedModel load_model(const std::string& dir, Device device = Device::cpu);
// The files a model or training checkpoint directory may hold.
bool is_checkpoint_file(const std::string& name);
// An error when DIR exists and holds anything but checkpoint files, or is a training checkpoint (state.json,
// optimizer state), so a writer never replaces a directory that is not a model checkpoint it may redo; WHAT
// names the flag or key in the message. The trainer writes its own checkpoints without this check.
void check_replaceable_checkpoint(const std::string& dir, const std::string& what);

// Adds every parameter to a writer under its Hugging Face name, stored as STORE_AS ("F32", "BF16" or "F16";
// rounded to nearest even).
void add_weights(io::SafetensorsWriter& writer, const Transformer& model, const std::string& store_as = "F32");
// Copies weights from a safetensors file into the model, checking every name, shape and dtype. F16 and
// BF16 tensors are widened to f32. `label` names the file in errors.
void load_weights(Transformer& model, const io::SafetensorsFile& file, const std::string& label);
// Same, from every file of a sharded model (each tensor read from the file that holds it).
void load_weights(Transformer& model, const std::vector<io::SafetensorsFile>& files, const std::string& label);

// The weights of a model directory: model.safetensors, or the shards model.safetensors.index.json names
// (a missing shard, or a tensor the index names but its shard lacks, is an error naming the index).
std::vector<io::SafetensorsFile> open_weight_files(const std::string& dir, std::string* label);

// Every tokenizer file of a checkpoint, the single place they are written: tokenizer.json as it was loaded
// and tokenizer_config.json (special-token roles, chat template; MODEL_MAX_LENGTH when > 0), so that
// transformers' AutoTokenizer.from_pretrained(DIR) gives gtpo's ids.
void write_tokenizer_files(const std::string& dir, const data::Tokenizer& tokenizer, int64_t model_max_length = 0);

// Writes the Hugging Face side of a model directory: config.json (TORCH_DTYPE names the weights' dtype)
// and generation_config.json, with the model's bos / eos ids, or the tokenizer's when the model has none.
void write_hf_config_files(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                           const std::string& torch_dtype = "float32");

}  // namespace gtpo::model
