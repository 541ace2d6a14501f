// Model checkpoints: a directory holding model.safetensors (Hugging Face names and layouts), config.yaml
// (model + tokenizer sections) and the tokenizer file. See docs/checkpoint-format.md.
#pragma once
#include <memory>
#include <string>

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

// Writes the three files, each atomically (temporary file, fsync, rename). Extra YAML text (already
// indented as top-level sections) is appended to config.yaml.
void save_model(const std::string& dir, const Transformer& model, const data::Tokenizer* tokenizer,
                const std::string& extra_yaml = "");
LoadedModel load_model(const std::string& dir, Device device = Device::cpu);

// Adds every parameter to a writer under its Hugging Face name.
void add_weights(io::SafetensorsWriter& writer, const Transformer& model);
// Copies weights from a safetensors file into the model, checking every name, shape and dtype. F16 and
// BF16 tensors are widened to f32. `label` names the file in errors.
void load_weights(Transformer& model, const io::SafetensorsFile& file, const std::string& label);

}  // namespace gtpo::model
