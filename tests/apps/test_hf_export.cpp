// Directories gtpo writes (gtpo init, gtpo export) load in transformers as they are
// (AutoModelForCausalLM.from_pretrained) and give gtpo score's per-token log-probs within 1e-4. The
// transformers side is scripts/reference/hf_check_dir.py, run with $GTPO_HF_PYTHON.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "model/checkpoint.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"
#include "tests/support/hf_reference.h"

using namespace gtpo;
using testing::call_command;
using Catch::Contains;
namespace fs = std::filesystem;

using testing::gtpo_vs_transformers;

TEST_CASE("apps: gtpo init and gtpo export --dtype bf16 directories give transformers gtpo's log-probs (1e-4)",
          "[apps][hf][export]") {
  const std::string dir = testing::fresh_temp_dir("apps_hf_export");
  const std::string base =
      "  vocab_size: 260\n  hidden_size: 32\n  num_hidden_layers: 2\n  num_attention_heads: 4\n"
      "  max_position_embeddings: 64\n";
  const std::vector<std::pair<std::string, std::string>> models = {
      {"gpt2", "model:\n  architecture: gpt2\n" + base},
      {"llama", "model:\n  architecture: llama\n" + base +
                    "  num_key_value_heads: 2\n  head_dim: 16\n  mlp_bias: true\n  attention_bias: true\n"
                    "  rope_scaling_type: llama3\n  rope_scaling_factor: 8\n"
                    "  rope_scaling_original_max_position_embeddings: 16\n"},
      {"llama_linear", "model:\n  architecture: llama\n" + base + "  rope_scaling_type: linear\n  rope_scaling_factor: 3\n"},
      {"qwen2", "model:\n  architecture: qwen2\n" + base + "  num_key_value_heads: 1\n  tie_word_embeddings: true\n"},
  };
  for (const auto& [name, yaml] : models) {
    INFO("model " << name);
    const std::string work = dir + "/" + name;
    fs::create_directories(work);
    io::write_file_atomic(work + "/model.yaml", yaml + "train:\n  seed: 5\n");
    REQUIRE(call_command({"init", work + "/model.yaml", "--out", work + "/init"}, apps::run_init) == 0);
    const double init_diff = gtpo_vs_transformers(work + "/init", work);
    WARN(name << ": gtpo init directory, max |gtpo - transformers| = " << init_diff);
    CHECK(init_diff < 1e-4);
    // The init's N(0, 0.02) weights give nearly uniform attention, where position handling hardly shows:
    // weights 15x larger (norm gains kept), written by save_model as every training checkpoint is, make
    // the log-probs depend on every option.
    {
      model::LoadedModel m = model::load_model(work + "/init");
      for (const optim::Parameter& p : m.model->parameters()) {
        if (p.name.find("norm") != std::string::npos || p.name.find("ln_") != std::string::npos) continue;
        std::vector<float> v = p.tensor.to_vector();
        for (float& x : v) x *= 15.0f;
        p.tensor.copy_(Tensor::from_vector(v, p.tensor.shape()));
      }
      model::save_model(work + "/ckpt", *m.model, m.tokenizer.get());
    }
    const double ckpt_diff = gtpo_vs_transformers(work + "/ckpt", work);
    WARN(name << ": save_model checkpoint (15x weights), max |gtpo - transformers| = " << ckpt_diff);
    CHECK(ckpt_diff < 1e-4);
    // bf16 export: gtpo scores the exported (rounded) weights too, so both sides see the same model.
    REQUIRE(call_command({"export", work + "/ckpt", "--out", work + "/hf", "--dtype", "bf16"}, apps::run_export) == 0);
    CHECK_FALSE(fs::exists(work + "/hf/config.yaml"));  // a clean HF directory: no gtpo state
    CHECK(nlohmann::json::parse(io::read_file(work + "/hf/config.json"))["torch_dtype"] == "bfloat16");
    const double bf16_diff = gtpo_vs_transformers(work + "/hf", work);
    WARN(name << ": gtpo export --dtype bf16, max |gtpo - transformers| = " << bf16_diff);
    CHECK(bf16_diff < 1e-4);
  }
  fs::remove_all(dir);
}

TEST_CASE("apps: export refuses a directory that is not a checkpoint, and bad flags", "[apps][export]") {
  const std::string dir = testing::fresh_temp_dir("apps_export_refuse");
  io::write_file_atomic(dir + "/model.yaml",
                        "model:\n  architecture: llama\n  vocab_size: 260\n  hidden_size: 16\n  num_hidden_layers: 1\n"
                        "  num_attention_heads: 2\n  max_position_embeddings: 16\n");
  REQUIRE(call_command({"init", dir + "/model.yaml", "--out", dir + "/ckpt"}, apps::run_init) == 0);
  fs::create_directories(dir + "/precious");
  io::write_file_atomic(dir + "/precious/notes.txt", "mine");
  CHECK_THROWS_WITH(call_command({"export", dir + "/ckpt", "--out", dir + "/precious"}, apps::run_export),
                    Contains("holds 'notes.txt', which is not a checkpoint file"));
  CHECK(io::read_file(dir + "/precious/notes.txt") == "mine");
  CHECK_THROWS_WITH(call_command({"export", dir + "/ckpt", "--out", dir + "/x", "--dtype", "f8"}, apps::run_export),
                    Contains("--dtype must be f32, bf16 or f16"));
  // f32 export twice: an export directory is replaceable, and it reads back as the same model.
  for (int i = 0; i < 2; ++i)
    REQUIRE(call_command({"export", dir + "/ckpt", "--out", dir + "/hf"}, apps::run_export) == 0);
  const model::LoadedModel a = model::load_model(dir + "/ckpt"), b = model::load_model(dir + "/hf");
  for (size_t i = 0; i < a.model->parameters().size(); ++i)
    CHECK(a.model->parameters().parameters()[i].tensor.to_vector() == b.model->parameters().parameters()[i].tensor.to_vector());
  CHECK(b.tokenizer != nullptr);
  fs::remove_all(dir);
}
