#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "model/checkpoint.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "tests/support/commands.h"

using namespace gtpo;
using namespace gtpo::model;
using Catch::Contains;

namespace {
ModelConfig small_config() {
  ModelConfig c;
  c.architecture = Architecture::llama;
  c.vocab_size = 300;
  c.hidden_size = 16;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.intermediate_size = 24;
  c.max_position_embeddings = 32;
  c.norm_eps = 1e-6f;
  return c;
}

}  // namespace

TEST_CASE("checkpoint: save then load gives bit-identical weights and the tokenizer", "[model][checkpoint]") {
  Transformer m(small_config());
  m.init_weights(17);
  auto tok = data::make_byte_tokenizer(300);
  const std::string dir = testing::fresh_temp_dir("ckpt_roundtrip");
  save_model(dir, m, tok.get());
  CHECK(std::filesystem::exists(dir + "/model.safetensors"));
  CHECK(std::filesystem::exists(dir + "/config.yaml"));
  CHECK(std::filesystem::exists(dir + "/tokenizer.json"));
  LoadedModel loaded = load_model(dir);
  REQUIRE(loaded.tokenizer);
  CHECK(loaded.tokenizer->decode(loaded.tokenizer->encode("hi there")) == "hi there");
  for (const optim::Parameter& p : m.parameters())
    CHECK(loaded.model->parameters().get(p.name).to_vector() == p.tensor.to_vector());
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint: init is a pure function of the seed", "[model][checkpoint]") {
  Transformer a(small_config()), b(small_config()), c(small_config());
  a.init_weights(5);
  b.init_weights(5);
  c.init_weights(6);
  const std::string name = "model.layers.1.mlp.down_proj.weight";
  CHECK(a.parameters().get(name).to_vector() == b.parameters().get(name).to_vector());
  CHECK(a.parameters().get(name).to_vector() != c.parameters().get(name).to_vector());
  CHECK(a.parameters().get("model.norm.weight").to_vector() == std::vector<float>(16, 1.0f));
}

TEST_CASE("checkpoint: corrupt, truncated and mismatched files give clear errors", "[model][checkpoint][errors]") {
  Transformer m(small_config());
  m.init_weights(1);
  const std::string dir = testing::fresh_temp_dir("ckpt_bad");
  save_model(dir, m, nullptr);
  // These edits test the checks beneath the digests (those a directory without checksums.xxh128 gets).
  std::filesystem::remove(dir + "/" + io::kDigestFile);
  const std::string weights = dir + "/model.safetensors";
  const std::string good = io::read_file(weights);

  SECTION("truncated weights") {
    io::write_file_atomic(weights, good.substr(0, good.size() - 100));
    CHECK_THROWS_WITH(load_model(dir), Contains("model.safetensors"));
  }
  SECTION("garbage header") {
    std::string bad = good;
    for (size_t i = 8; i < 40; ++i) bad[i] = '#';
    io::write_file_atomic(weights, bad);
    CHECK_THROWS_WITH(load_model(dir), Contains("model.safetensors"));
  }
  SECTION("shape mismatch names the tensor") {
    std::string cfg = io::read_file(dir + "/config.yaml");
    cfg.replace(cfg.find("intermediate_size: 24"), 21, "intermediate_size: 32");
    io::write_file_atomic(dir + "/config.yaml", cfg);
    CHECK_THROWS_WITH(load_model(dir), Contains("tensor 'model.layers.0.mlp.gate_proj.weight' has shape [24, 16], expected [32, 16]"));
  }
  SECTION("missing tensor names the tensor") {
    std::string cfg = io::read_file(dir + "/config.yaml");
    cfg.replace(cfg.find("num_hidden_layers: 2"), 20, "num_hidden_layers: 3");
    io::write_file_atomic(dir + "/config.yaml", cfg);
    CHECK_THROWS_WITH(load_model(dir), Contains("tensor 'model.layers.2.input_layernorm.weight' is missing"));
  }
  SECTION("unexpected tensor") {
    std::string cfg = io::read_file(dir + "/config.yaml");
    cfg.replace(cfg.find("num_hidden_layers: 2"), 20, "num_hidden_layers: 1");
    io::write_file_atomic(dir + "/config.yaml", cfg);
    CHECK_THROWS_WITH(load_model(dir), Contains("unexpected tensor 'model.layers.1."));
  }
  SECTION("bad config value names the key") {
    std::string cfg = io::read_file(dir + "/config.yaml");
    cfg.replace(cfg.find("hidden_size: 16"), 15, "hidden_size: abc");
    io::write_file_atomic(dir + "/config.yaml", cfg);
    CHECK_THROWS_WITH(load_model(dir), Contains("model.hidden_size: expected integer >= 1, got 'abc'"));
  }
  SECTION("missing config") {
    const std::string yaml = model_config_to_yaml(load_model(dir).model->config());
    std::filesystem::remove(dir + "/config.yaml");
    // Without gtpo's config.yaml the directory is read as a Hugging Face one, through config.json.
    CHECK(model_config_to_yaml(load_model(dir).model->config()) == yaml);
    std::filesystem::remove(dir + "/config.json");
    CHECK_THROWS_WITH(load_model(dir), Contains("neither config.yaml (a gtpo checkpoint) nor config.json"));
  }
  SECTION("not a directory") { CHECK_THROWS_WITH(load_model(dir + "/nope"), Contains("is not a directory")); }
  SECTION("a tied config with another lm_head.weight in the file names the file and both tensors") {
    const auto tie = [&] {
      std::string cfg = io::read_file(dir + "/config.yaml");
      cfg.replace(cfg.find("tie_word_embeddings: false"), 26, "tie_word_embeddings: true");
      io::write_file_atomic(dir + "/config.yaml", cfg);
    };
    tie();
    CHECK_THROWS_WITH(load_model(dir), Contains(weights) &&
                                           Contains("tensor 'lm_head.weight' differs from "
                                                    "'model.embed_tokens.weight' (element 0") &&
                                           Contains("tie_word_embeddings"));
    // The same matrix written out twice, as save_pretrained may do, loads.
    m.parameters().get("lm_head.weight").copy_(m.parameters().get("model.embed_tokens.weight"));
    save_model(dir, m, nullptr);
    std::filesystem::remove(dir + "/" + io::kDigestFile);
    tie();
    LoadedModel loaded = load_model(dir);
    CHECK(loaded.model->config().tie_word_embeddings);
    CHECK(loaded.model->parameters().get("model.embed_tokens.weight").to_vector() ==
          m.parameters().get("lm_head.weight").to_vector());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("checkpoint: a Hugging Face directory's eos id past a smaller vocabulary loads, ending nothing",
          "[model][checkpoint]") {
  // As a GPT-2 directory cut to a smaller vocabulary keeps eos 50256: transformers loads it, and so does
  // gtpo.
  ModelConfig c = small_config();
  c.architecture = Architecture::gpt2;
  c.num_key_value_heads = c.num_attention_heads;
  c.tie_word_embeddings = true;
  Transformer m(c);
  m.init_weights(2);
  const std::string dir = testing::fresh_temp_dir("ckpt_eos_past_vocab");
  save_model(dir, m, nullptr);
  std::filesystem::remove(dir + "/config.yaml");  // read as a Hugging Face directory, through config.json
  std::filesystem::remove(dir + "/" + io::kDigestFile);  // which has no digests
  io::write_file_atomic(dir + "/generation_config.json",
                        R"({"bos_token_id": 50256, "eos_token_id": [50256, 7]})");
  LoadedModel loaded = load_model(dir);
  CHECK(loaded.model->eos_token_ids() == std::vector<int32_t>{7});
  std::filesystem::remove_all(dir);
}
