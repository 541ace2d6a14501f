// Model checkpoints: a directory holding model.safetensors (Hugging Face names and layouts), config.yaml
// (model + tokenizer sections) and the tokenizer file. See docs/checkpoint-format.md.
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
  std::unique_ptr<Transformer> model;
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
// Non-finite weights are an error naming the tensor.
LoadedModel load_model(const std::string& dir, Device device = Device::cpu);
// The files a model or training checkpoint directory may hold.
bool is_checkpoint_file(const std::string& name);
// An error when DIR exists and holds anything but checkpoint files (so a writer never replaces a directory
// that is not a checkpoint); WHAT names the flag or key in the message.
void check_replaceable_checkpoint(const std::string& dir, const std::string& what);

// Adds every parameter to a writer under its Hugging Face name.
void add_weights(io::SafetensorsWriter& writer, const Transformer& model);
// Copies weights from a safetensors file into the model, checking every name, shape and dtype. F16 and
// BF16 tensors are widened to f32. `label` names the file in errors.
void load_weights(Transformer& model, const io::SafetensorsFile& file, const std::string& label);

}  // namespace gtpo::model
