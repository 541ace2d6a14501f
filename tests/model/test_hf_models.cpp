// Hugging Face model directories as transformers' save_pretrained writes them
// (tests/fixtures/hf_models/, made by scripts/reference/hf_models.py): gtpo loads each and its per-token
// log-probs match those transformers computed, within 1e-4. Errors for what gtpo refuses.
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/hf_config.h"
#include "model/sampler.h"
#include "runtime/autograd.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"

using namespace gtpo;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

std::string fixture(const std::string& name) { return std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/hf_models/" + name; }

// Max |gtpo - transformers| over the fixture's per-token log-probs.
double max_logprob_difference(const std::string& dir, model::LoadedModel& loaded) {
  const nlohmann::json expected = nlohmann::json::parse(io::read_file(dir + "/expected.json"));
  const std::vector<int32_t> tokens = expected["tokens"].get<std::vector<int32_t>>();
  const std::vector<double> want = expected["logprobs"].get<std::vector<double>>();
  const int64_t T = static_cast<int64_t>(tokens.size()), V = loaded.model->config().vocab_size;
  NoGradGuard no_grad;
  const std::vector<float> logits = loaded.model->forward(Tensor::from_ints(tokens, {1, T})).to_vector();
  REQUIRE(want.size() == static_cast<size_t>(T - 1));
  double worst = 0.0;
  for (int64_t t = 1; t < T; ++t) {
    const float* row = &logits[static_cast<size_t>((t - 1) * V)];
    double m = row[0], sum = 0.0;
    for (int64_t v = 0; v < V; ++v) m = std::max(m, static_cast<double>(row[v]));
    for (int64_t v = 0; v < V; ++v) sum += std::exp(row[v] - m);
    const double lp = row[tokens[static_cast<size_t>(t)]] - m - std::log(sum);
    worst = std::max(worst, std::abs(lp - want[static_cast<size_t>(t - 1)]));
  }
  return worst;
}

// A copy of a fixture whose config.json (or another JSON file) is edited by EDIT.
std::string edited_copy(const std::string& name, const std::string& file,
                        const std::function<void(nlohmann::json&)>& edit) {
  const std::string dir = testing::fresh_temp_dir("hf_" + name + "_edit");
  fs::remove_all(dir);
  fs::copy(fixture(name), dir, fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(io::read_file(dir + "/" + file));
  edit(j);
  io::write_file_atomic(dir + "/" + file, j.dump(2));
  return dir;
}

}  // namespace

TEST_CASE("hf models: save_pretrained directories give transformers' log-probs within 1e-4", "[model][hf]") {
  for (const char* name : {"gpt2", "llama_options", "llama3_rope", "qwen2_tied", "llama_bf16", "qwen2_sharded"}) {
    INFO("fixture " << name);
    model::LoadedModel loaded = model::load_model(fixture(name));
    const double diff = max_logprob_difference(fixture(name), loaded);
    WARN("fixture " << name << ": max |log-prob - transformers| = " << diff);
    CHECK(diff < 1e-4);
  }
}

TEST_CASE("hf models: config.json options reach the model", "[model][hf]") {
  const model::ModelConfig opts = model::load_model(fixture("llama_options")).model->config();
  CHECK(opts.head_dim() == 16);
  CHECK(opts.hidden_size == 32);
  CHECK(opts.mlp_bias);
  CHECK(opts.attention_bias);
  CHECK(opts.num_key_value_heads == 2);
  CHECK_FALSE(opts.tie_word_embeddings);
  CHECK(opts.rope_scaling == RopeScaling::linear);  // from the old "type" spelling
  CHECK(opts.rope_scaling_factor == 2.0);
  const model::LoadedModel llama3 = model::load_model(fixture("llama3_rope"));
  CHECK(llama3.model->config().rope_scaling == RopeScaling::llama3);
  CHECK(llama3.model->config().rope_scaling_original_max_position_embeddings == 16);
  // generation_config.json's eos list [2, 5] (config.json's 2 is one of them).
  CHECK(llama3.model->eos_token_ids() == std::vector<int32_t>{2, 5});
  CHECK(llama3.model->bos_token_id() == 1);
  const model::ModelConfig qwen = model::load_model(fixture("qwen2_tied")).model->config();
  CHECK(qwen.tie_word_embeddings);
  CHECK(qwen.rope_scaling == RopeScaling::none);  // rope_scaling: null
  CHECK(model::load_model(fixture("gpt2")).model->config().intermediate_size == 128);  // n_inner: null -> 4 n_embd
  // Without a config.yaml the directory's model is the one config.json describes.
  CHECK_FALSE(fs::exists(fixture("qwen2_sharded") + "/config.yaml"));
}

TEST_CASE("hf models: sampling stops at any of the model's eos ids", "[model][hf][sampler]") {
  model::LoadedModel loaded = model::load_model(fixture("llama3_rope"));
  model::SamplingOptions o;
  o.group_size = 16;
  o.max_new_tokens = 40;
  o.temperature = 1.5f;
  o.seed = 3;
  o.eos_id = 2;
  const std::vector<model::Sample> plain = model::sample_groups(*loaded.model, {{0, {1, 7, 9}}}, o);
  const std::vector<model::Sample> both =
      model::sample_groups(*loaded.model, {{0, {1, 7, 9}}}, model::with_model_eos(o, *loaded.model));
  int64_t stopped_at_5 = 0;
  for (size_t i = 0; i < both.size(); ++i) {
    // The same random stream: samples agree up to the first 5, where only the multi-eos run stops.
    const std::vector<int32_t>& a = plain[i].tokens;
    const std::vector<int32_t>& b = both[i].tokens;
    REQUIRE(b.size() <= a.size());
    CHECK(std::equal(b.begin(), b.end(), a.begin()));
    if (both[i].finish == model::FinishReason::eos && b.back() == 5) ++stopped_at_5;
    for (size_t t = 0; t + 1 < b.size(); ++t) CHECK((b[t] != 5 && b[t] != 2));
  }
  CHECK(stopped_at_5 > 0);
}

TEST_CASE("hf models: what gtpo does not implement is an error naming the file and the key", "[model][hf][errors]") {
  const auto config_error = [](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    const std::string dir = edited_copy(name, "config.json", edit);
    std::string message;
    try {
      model::load_model(dir);
    } catch (const Error& e) {
      message = e.what();
    }
    fs::remove_all(dir);
    return message;
  };
  std::string m = config_error("llama3_rope", [](nlohmann::json& j) { j["rope_scaling"]["rope_type"] = "yarn"; });
  CHECK_THAT(m, Contains("config.json") && Contains("'rope_scaling.rope_type' = \"yarn\" is not supported") &&
                    Contains("\"linear\", \"llama3\""));
  m = config_error("qwen2_tied", [](nlohmann::json& j) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = 16;
    j["max_window_layers"] = 0;
  });
  CHECK_THAT(m, Contains("config.json") && Contains("'use_sliding_window' = true") && Contains("sliding_window 16"));
  // An enabled window that never applies (longer than any sequence) is accepted.
  CHECK(config_error("qwen2_tied", [](nlohmann::json& j) {
          j["use_sliding_window"] = true;
          j["sliding_window"] = 4096;
        }).empty());
  m = config_error("llama_bf16", [](nlohmann::json& j) {
    j["architectures"] = {"MistralForCausalLM"};
    j["model_type"] = "mistral";
  });
  CHECK_THAT(m, Contains("config.json") && Contains("'model_type' = \"mistral\" is not supported") &&
                    Contains("LlamaForCausalLM"));
  m = config_error("llama_bf16", [](nlohmann::json& j) { j["architectures"] = {"MistralForCausalLM"}; });
  CHECK_THAT(m, Contains("config.json") && Contains("'architectures' names \"MistralForCausalLM\""));
  m = config_error("llama_bf16", [](nlohmann::json& j) { j["hidden_act"] = "gelu"; });
  CHECK_THAT(m, Contains("config.json") && Contains("'hidden_act' = \"gelu\" is not supported"));
  m = config_error("gpt2", [](nlohmann::json& j) { j["activation_function"] = "relu"; });
  CHECK_THAT(m, Contains("config.json") && Contains("'activation_function' = \"relu\""));
  m = config_error("llama_bf16", [](nlohmann::json& j) { j["num_hidden_layers"] = "two"; });
  CHECK_THAT(m, Contains("config.json") && Contains("'num_hidden_layers': expected a positive integer"));
  // Unknown harmless keys and nulls are fine.
  CHECK(config_error("llama_bf16", [](nlohmann::json& j) {
          j["some_future_key"] = 1;
          j["pad_token_id"] = nullptr;
          j["head_dim"] = nullptr;  // null: the default (hidden_size / num_attention_heads)
        }).empty());

  // Sharded weights: a missing shard, and an index naming a tensor its shard lacks.
  const std::string dir = testing::fresh_temp_dir("hf_shards");
  fs::remove_all(dir);
  fs::copy(fixture("qwen2_sharded"), dir, fs::copy_options::recursive);
  fs::rename(dir + "/model-00002-of-00007.safetensors", dir + "/moved.safetensors");
  CHECK_THROWS_WITH(model::load_model(dir), Contains("model.safetensors.index.json") && Contains("key 'weight_map.") &&
                                                Contains("model-00002-of-00007.safetensors', which is missing"));
  fs::rename(dir + "/moved.safetensors", dir + "/model-00002-of-00007.safetensors");
  nlohmann::json index = nlohmann::json::parse(io::read_file(dir + "/model.safetensors.index.json"));
  index["weight_map"]["model.layers.0.mlp.up_proj.bias"] = "model-00001-of-00007.safetensors";
  io::write_file_atomic(dir + "/model.safetensors.index.json", index.dump());
  CHECK_THROWS_WITH(model::load_model(dir),
                    Contains("model.safetensors.index.json") && Contains("key 'weight_map.model.layers.0.mlp.up_proj.bias'") &&
                        Contains("which has no tensor"));
  fs::remove_all(dir);
}

TEST_CASE("hf models: config.json written by gtpo reads back as the same model", "[model][hf]") {
  for (const char* name : {"gpt2", "llama_options", "llama3_rope", "qwen2_tied"}) {
    INFO(name);
    const model::ModelConfig c = model::load_model(fixture(name)).model->config();
    const model::HfModelConfig back = model::parse_hf_config(model::hf_config_json(c, 1, {2, 7}), "written");
    CHECK(model::model_config_to_yaml(back.config) == model::model_config_to_yaml(c));
    CHECK(back.eos_token_ids == std::vector<int32_t>{2, 7});
    CHECK(back.bos_token_id == 1);
  }
}
