// gtpo init / score / sample, driven as a user would, through the command functions.
#include <catch2/catch.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "apps/run_setup.h"
#include "model/checkpoint.h"
#include "model/sampler.h"
#include "rl/run_config.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"

using namespace gtpo;
using testing::call_command;
using Catch::Contains;

namespace {
std::string write_config(const std::string& dir) {
  const std::string path = dir + "/model.yaml";
  io::write_file_atomic(
      path,
      "model:\n  architecture: gpt2\n  vocab_size: 260\n  hidden_size: 32\n  num_hidden_layers: 2\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 64\ntokenizer:\n  kind: byte\n");
  return path;
}
}  // namespace

TEST_CASE("apps: init writes a loadable checkpoint, overrides and seed apply", "[apps][init]") {
  const std::string dir = testing::fresh_temp_dir("apps_init");
  const std::string config = write_config(dir);
  REQUIRE(call_command({"init", config, "model.num_hidden_layers=3", "train.seed=4", "--out", dir + "/ckpt"},
                       apps::run_init) == 0);
  model::LoadedModel m = model::load_model(dir + "/ckpt");
  CHECK(m.model->config().num_hidden_layers == 3);
  REQUIRE(m.tokenizer);
  // The config is read as gtpo train reads it: the model and tokenizer are the ones a run of it starts from,
  // bit for bit.
  rl::RunConfig run_config =
      rl::load_run_config(config, {{"model.num_hidden_layers", "3"}, {"train.seed", "4"}});
  const apps::RunObjects run = apps::build_run(run_config);
  CHECK(m.tokenizer->kind() == run.tokenizer->kind());
  CHECK(m.tokenizer->vocab_size() == run.tokenizer->vocab_size());
  CHECK(m.tokenizer->encode("12+7=19") == run.tokenizer->encode("12+7=19"));
  for (const auto& p : run.model->parameters())
    CHECK(m.model->parameters().get(p.name).to_vector() == p.tensor.to_vector());
  // The seed is train.seed, in the file or on the command line, as in gtpo train's config.
  io::write_file_atomic(dir + "/seeded.yaml", io::read_file(config) + "train:\n  seed: 4\n");
  REQUIRE(
      call_command({"init", dir + "/seeded.yaml", "model.num_hidden_layers=3", "--out", dir + "/file_seed"},
                   apps::run_init) == 0);
  REQUIRE(call_command({"init", config, "model.num_hidden_layers=3", "--out", dir + "/seed0"},
                       apps::run_init) == 0);
  const std::string name = "transformer.h.0.mlp.c_fc.weight";
  const auto weights = [&](const std::string& ckpt) {
    return model::load_model(dir + "/" + ckpt).model->parameters().get(name).to_vector();
  };
  CHECK(weights("file_seed") == weights("ckpt"));
  CHECK(weights("seed0") != weights("ckpt"));
  CHECK_THROWS_WITH(call_command({"init", config, "seed=4", "--out", dir + "/x"}, apps::run_init),
                    Contains("override 'seed=4'") && Contains("train.seed"));
  io::write_file_atomic(dir + "/top_seed.yaml", io::read_file(config) + "seed: 4\n");
  CHECK_THROWS_WITH(
      call_command({"init", dir + "/top_seed.yaml", "--out", dir + "/x"}, apps::run_init),
      Contains("top_seed.yaml:10") && Contains("unknown section 'seed' (the seed is train.seed)"));
  CHECK_THROWS_WITH(
      call_command({"init", config, "model.hidden_sise=32", "--out", dir + "/x"}, apps::run_init),
      Contains("hidden_sise") && Contains("did you mean 'hidden_size'"));
  CHECK_THROWS_WITH(
      call_command({"init", config, "train.init_from=" + dir + "/ckpt", "--out", dir + "/x"}, apps::run_init),
      Contains("train.init_from") && Contains("gtpo export"));
  CHECK_THROWS_WITH(call_command({"init", config, "model.hidden_size=30", "--out", dir + "/x"}, apps::run_init),
                    Contains("divisible by num_attention_heads"));
  CHECK_THROWS_WITH(call_command({"init", config}, apps::run_init), Contains("missing required option --out"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("apps: score reproduces the sampler's log-probs and entropies within 1e-5", "[apps][score]") {
  const std::string dir = testing::fresh_temp_dir("apps_score");
  REQUIRE(call_command({"init", write_config(dir), "--out", dir + "/ckpt"}, apps::run_init) == 0);
  model::LoadedModel m = model::load_model(dir + "/ckpt");
  model::SamplingOptions o;
  o.group_size = 3;
  o.max_new_tokens = 9;
  o.temperature = 0.8f;
  o.seed = 11;
  std::vector<model::Sample> samples = model::sample_groups(*m.model, {{0, {72, 105, 33}}}, o);
  std::string in;
  for (const model::Sample& s : samples) {
    std::vector<int32_t> seq = s.prompt_tokens;
    seq.insert(seq.end(), s.tokens.begin(), s.tokens.end());
    in += nlohmann::json({{"tokens", seq}, {"prompt_len", s.prompt_tokens.size()}}).dump() + "\n";
  }
  io::write_file_atomic(dir + "/in.jsonl", in);
  REQUIRE(call_command({"score", "--checkpoint", dir + "/ckpt", "--in", dir + "/in.jsonl", "--out", dir + "/out.jsonl",
                "--temperature", "0.8"},
               apps::run_score) == 0);
  std::istringstream out(io::read_file(dir + "/out.jsonl"));
  std::string line;
  for (const model::Sample& s : samples) {
    REQUIRE(std::getline(out, line));
    nlohmann::json j = nlohmann::json::parse(line);
    std::vector<float> lp = j["logprobs"], ent = j["entropies"];
    REQUIRE(lp.size() == s.logprobs.size());
    for (size_t i = 0; i < lp.size(); ++i) {
      CHECK(std::abs(lp[i] - s.logprobs[i]) < 1e-5);
      CHECK(std::abs(ent[i] - s.entropies[i]) < 1e-5);
    }
  }
  io::write_file_atomic(dir + "/bad.jsonl", "{\"tokens\": [1, 2], \"prompt_len\": 1}\n{\"tokens\": [1, 999], \"prompt_len\": 1}\n");
  CHECK_THROWS_WITH(call_command({"score", "--checkpoint", dir + "/ckpt", "--in", dir + "/bad.jsonl", "--out", dir + "/o.jsonl"},
                         apps::run_score),
                    Contains("bad.jsonl:2: token id 999 outside [0, 260)"));
  io::write_file_atomic(dir + "/bad2.jsonl", "{\"tokens\": [1, 2]}\n");
  CHECK_THROWS_WITH(call_command({"score", "--checkpoint", dir + "/ckpt", "--in", dir + "/bad2.jsonl", "--out", dir + "/o.jsonl"},
                         apps::run_score),
                    Contains("bad2.jsonl:1: expected an integer \"prompt_len\""));
  std::filesystem::remove_all(dir);
}

TEST_CASE("apps: sample checks its flags", "[apps][sample]") {
  const std::string dir = testing::fresh_temp_dir("apps_sample");
  REQUIRE(call_command({"init", write_config(dir), "--out", dir + "/ckpt"}, apps::run_init) == 0);
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", dir + "/ckpt"}, apps::run_sample),
                    Contains("exactly one of --prompt and --prompt-tokens"));
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt-tokens", "1,x"}, apps::run_sample),
                    Contains("comma-separated integers"));
  CHECK_THROWS_WITH(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "hi", "--bogus"}, apps::run_sample),
                    Contains("unknown option '--bogus'"));
  CHECK(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "hi", "-n", "2", "--max-new-tokens", "3", "--jsonl"},
             apps::run_sample) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("apps: sample never draws an id past the tokenizer's entries from a larger embedding",
          "[apps][sample]") {
  // As with Qwen2.5 (151,936 embedding rows, 151,665 tokenizer entries): here 400 rows, a few characters.
  const std::string dir = testing::fresh_temp_dir("apps_sample_extra_rows");
  io::write_file_atomic(
      dir + "/model.yaml",
      "model:\n  architecture: llama\n  vocab_size: 400\n  hidden_size: 32\n  num_hidden_layers: 2\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 64\ntokenizer:\n  kind: char\n"
      "  alphabet: \"ab \"\n");
  REQUIRE(call_command({"init", dir + "/model.yaml", "--out", dir + "/ckpt"}, apps::run_init) == 0);
  // Nearly every row's mass lies on the 390-odd ids nothing decodes; before, the first one sampled ended the
  // command.
  CHECK(call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "ab", "-n", "16",
                      "--max-new-tokens", "20", "--temperature", "1", "--jsonl"},
                     apps::run_sample) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("apps: misspelt flags and commands get the nearest name, and --version says what was built",
          "[apps][cli]") {
  const std::string dir = testing::fresh_temp_dir("apps_did_you_mean");
  REQUIRE(call_command({"init", write_config(dir), "--out", dir + "/ckpt"}, apps::run_init) == 0);
  CHECK_THROWS_WITH(
      call_command({"sample", "--checkpoint", dir + "/ckpt", "--prompt", "hi", "--temprature", "1"},
                   apps::run_sample),
      Contains("unknown option '--temprature' (did you mean '--temperature'?)"));
  const testing::ShellResult command = testing::run_shell(testing::gtpo_binary() + " trian x.yaml");
  CHECK(command.code == 2);
  CHECK_THAT(command.output, Contains("unknown command 'trian' (did you mean 'train'?)"));
  const testing::ShellResult version = testing::run_shell(testing::gtpo_binary() + " --version");
  CHECK(version.code == 0);
  CHECK_THAT(version.output,
             Contains("gtpo 0.") && Contains("backends: cpu") && Contains("data-parallel ranks"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("apps: init takes model.vocab_size from the tokenizer when the config leaves it out",
          "[apps][init]") {
  const std::string dir = testing::fresh_temp_dir("apps_init_vocab");
  const std::string model =
      "model:\n  architecture: llama\n  hidden_size: 32\n  num_hidden_layers: 1\n"
      "  num_attention_heads: 4\n  max_position_embeddings: 32\n";
  io::write_file_atomic(dir + "/char.yaml", model + "tokenizer:\n  kind: char\n  alphabet: \"ab \"\n");
  REQUIRE(call_command({"init", dir + "/char.yaml", "--out", dir + "/char"}, apps::run_init) == 0);
  const model::LoadedModel m = model::load_model(dir + "/char");
  REQUIRE(m.tokenizer);
  CHECK(m.model->config().vocab_size == m.tokenizer->vocab_size());
  io::write_file_atomic(dir + "/byte.yaml", model + "tokenizer:\n  kind: byte\n");
  REQUIRE(call_command({"init", dir + "/byte.yaml", "--out", dir + "/byte"}, apps::run_init) == 0);
  CHECK(model::load_model(dir + "/byte").model->config().vocab_size == 259);
  // No tokenizer: section: the run's default, the task's characters, as gtpo train takes it.
  io::write_file_atomic(dir + "/none.yaml", model + "task:\n  name: countdown\n");
  REQUIRE(call_command({"init", dir + "/none.yaml", "--out", dir + "/none"}, apps::run_init) == 0);
  const model::LoadedModel none = model::load_model(dir + "/none");
  REQUIRE(none.tokenizer);
  CHECK(none.tokenizer->kind() == "char");
  CHECK(none.model->config().vocab_size == none.tokenizer->vocab_size());
  // A tokenizer the model cannot represent, as gtpo train says it.
  CHECK_THROWS_WITH(
      call_command({"init", dir + "/byte.yaml", "model.vocab_size=100", "--out", dir + "/small"},
                   apps::run_init),
      Contains("tokenizer.kind byte") && Contains("model.vocab_size is 100"));
  std::filesystem::remove_all(dir);
}
