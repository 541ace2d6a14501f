// gtpo init: writes a freshly initialised model checkpoint.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "apps/args.h"
#include "apps/commands.h"
#include "data/tokenizer/char_tokenizer.h"
#include "model/checkpoint.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/yaml_config.h"

namespace gtpo::apps {

namespace {

const std::vector<FlagSpec> kFlags = {{"--out", true, "checkpoint directory to write (required)"}};

// The tokenizer a config asks for: `tokenizer: {kind: byte}`, `{kind: char, alphabet: "..."}`,
// `{file: path/to/tokenizer.json}`, or no section (a byte-level vocabulary when vocab_size >= 259).
// VOCAB_SIZE 0: the config leaves model.vocab_size to the tokenizer (a byte tokenizer is then 259 ids).
std::unique_ptr<data::Tokenizer> tokenizer_from(const YAML::Node& node, int64_t vocab_size,
                                                const std::string& where) {
  if (!node) {
    if (vocab_size >= 259) return data::make_byte_tokenizer(static_cast<int32_t>(vocab_size));
    return nullptr;
  }
  GTPO_CHECK(node.IsMap(), where, ": tokenizer must be a mapping (kind: byte|char|bpe, alphabet or file)");
  if (node["file"]) return data::load_tokenizer(node["file"].as<std::string>());
  const std::string kind = node["kind"] ? node["kind"].as<std::string>() : "byte";
  if (kind == "byte")
    return data::make_byte_tokenizer(static_cast<int32_t>(std::max<int64_t>(vocab_size, 259)));
  if (kind == "char") {
    GTPO_CHECK(node["alphabet"], where, ": tokenizer.kind char needs tokenizer.alphabet");
    return std::make_unique<data::CharTokenizer>(node["alphabet"].as<std::string>());
  }
  fail(where, ": tokenizer.kind must be byte or char (or give tokenizer.file), got '", kind, "'");
}

}  // namespace

int run_init(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.help()) {
    std::fputs(
        usage_text("gtpo init CONFIG.yaml [model.KEY=VALUE ...] [train.seed=N] --out DIR",
                   "Writes a freshly initialised model (GPT-2-style init scaled by depth, a pure function\n"
                   "of the seed) as a checkpoint directory: model.safetensors, config.yaml, tokenizer.json,\n"
                   "and config.json + generation_config.json so transformers' from_pretrained loads it.\n"
                   "A config holding only a model: section is enough; a run config works too (its model:,\n"
                   "tokenizer: and train.seed are read, as gtpo train would initialise the model).",
                   kFlags)
            .c_str(),
        stdout);
    return 0;
  }
  GTPO_CHECK(args.positionals().size() == 1, "init: expected exactly one CONFIG.yaml, got ", args.positionals().size());
  const std::string path = args.positionals()[0];
  const std::string out = args.require("--out");
  const YAML::Node root = io::load_yaml(io::read_file(path), path);
  GTPO_CHECK(root.IsMap() && root["model"], path, ": no 'model:' section");
  std::vector<io::ConfigValue> values = io::read_yaml_section(root["model"], path, "model");
  // The seed is train.seed, as in the run config that gtpo train reads (which initialises with it too).
  GTPO_CHECK(!root["seed"], io::line_of(path, root["seed"]),
             ": there is no top-level seed: the seed is train.seed ",
             "(train: {seed: N}), as in gtpo train's config");
  const config::Codec<uint64_t> seed_codec = config::integer<uint64_t>(0);
  uint64_t seed = 0;
  if (root["train"] && root["train"].IsMap() && root["train"]["seed"]) {
    try {
      seed = seed_codec.parse(root["train"]["seed"].Scalar());
    } catch (const Error& e) {
      fail(io::line_of(path, root["train"]["seed"]), ": train.seed: ", e.what());
    }
  }
  for (const auto& [key, value] : args.overrides()) {
    if (key.rfind("model.", 0) == 0) {
      values.push_back({"command line", "model", key.substr(6), value});
    } else if (key == "train.seed") {
      try {
        seed = seed_codec.parse(value);
      } catch (const Error& e) {
        fail("command line: train.seed: ", e.what());
      }
    } else {
      fail("init: unknown override '", key, "'", key == "seed" ? " (the seed is train.seed)" : "",
           " (use model.KEY=VALUE or train.seed=N)");
    }
  }
  // model.vocab_size left out is the tokenizer's size, as in gtpo train's config.
  const bool has_vocab = std::any_of(values.begin(), values.end(),
                                     [](const io::ConfigValue& v) { return v.key == "vocab_size"; });
  int64_t vocab_size = 0;
  if (has_vocab) vocab_size = model::model_config_from_values(values, path).vocab_size;
  auto tokenizer = tokenizer_from(root["tokenizer"], vocab_size, path);
  GTPO_CHECK(
      has_vocab || tokenizer, path, ": model.vocab_size is left out and there is no tokenizer: section to ",
      "take it from: give model.vocab_size, or a tokenizer (tokenizer: {kind: byte}, {kind: char, alphabet: ",
      "...} or {file: tokenizer.json})");
  if (!has_vocab) values.push_back({path, "model", "vocab_size", std::to_string(tokenizer->vocab_size())});
  // Overrides join the file's values before the derived defaults (intermediate_size, ...) are worked out.
  const model::ModelConfig mc = model::model_config_from_values(values, path);
  if (tokenizer)
    GTPO_CHECK(tokenizer->vocab_size() <= mc.vocab_size, path, ": the tokenizer has ", tokenizer->vocab_size(),
               " tokens but model.vocab_size is ", mc.vocab_size);
  model::Transformer m(mc);
  m.init_weights(seed);
  model::save_model(out, m, tokenizer.get());
  std::printf("wrote %s: %s, %lld parameters, seed %llu%s\n", out.c_str(), model::architecture_name(mc.architecture),
              static_cast<long long>(m.parameters().numel()), static_cast<unsigned long long>(seed),
              tokenizer ? (", tokenizer " + tokenizer->kind()).c_str() : ", no tokenizer");
  return 0;
}

}  // namespace gtpo::apps
