#include "rl/run_config_schema.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "rl/foreign_names.h"
#include "rl/math/algorithm_registry.h"
#include "runtime/error.h"

namespace gtpo::rl::schema {

using config::field;

config::Codec<optim::LrScheduleKind> schedule_codec() {
  std::vector<std::pair<std::string, optim::LrScheduleKind>> kinds;
  for (auto k : {optim::LrScheduleKind::constant, optim::LrScheduleKind::constant_with_warmup,
                 optim::LrScheduleKind::cosine})
    kinds.emplace_back(optim::lr_schedule_kind_name(k), k);
  return config::choice(kinds);
}

std::vector<RunKey> tokenizer_and_task_keys() {
  const auto kinds = config::choice<TokenizerKind>(
      {{"char", TokenizerKind::Char}, {"byte", TokenizerKind::Byte}, {"file", TokenizerKind::File}});
  return {
      field("tokenizer", "kind", &RunConfig::tokenizer, &TokenizerSection::kind, kinds,
            "char: one token per character; byte: 256 bytes plus <pad>, <bos>, <eos>; file: tokenizer.file"),
      field("tokenizer", "alphabet", &RunConfig::tokenizer, &TokenizerSection::alphabet, config::text(),
            "characters of the char tokenizer; empty = the task's alphabet"),
      field("tokenizer", "file", &RunConfig::tokenizer, &TokenizerSection::file, config::text(),
            "path of a tokenizer.json (kind file)"),
      field("task", "name", &RunConfig::task, &TaskSection::name, config::text(),
            "problem generator: arith, chain, countdown or progression (its options follow below)"),
      field("task", "train_file", &RunConfig::task, &TaskSection::train_file, config::text(),
            "JSONL training problems instead of the generator (needs test_file)"),
      field("task", "test_file", &RunConfig::task, &TaskSection::test_file, config::text(),
            "JSONL test problems (needs train_file)"),
      field(
          "task", "shuffle", &RunConfig::task, &TaskSection::shuffle, config::boolean(),
          "train_file's rows in a new order each epoch (each pass over the file), drawn from train.seed and "
          "the epoch, so a run and its resume see the same order; false = file order (generators and "
          "test_file are never shuffled)"),
  };
}

std::vector<RunKey> rl_section_keys() {
  // rl.algo resets every RL key to the algorithm's defaults, so parse_run_config applies it first.
  std::vector<RunKey> k = {{"rl", "algo", config::join(algorithm_names(), "|"),
                            "the algorithm; its defaults apply before the other RL keys",
                            [](RunConfig& c, const std::string& v) { c.rl = defaults_for(v); },
                            [](const RunConfig& c) { return c.rl.algo; }}};
  for (const RlKey& key : rl_keys()) k.push_back(config::lift(key, &RunConfig::rl));
  return k;
}

const std::vector<RunKey>& keys() {
  static const std::vector<RunKey> all = [] {
    std::vector<RunKey> k;
    for (auto* owner : {tokenizer_and_task_keys, prompt_keys, sampler_keys, rl_section_keys, reward_keys,
                        teacher_keys, optim_keys, sft_keys, train_keys, eval_keys, log_keys})
      for (RunKey& key : owner()) k.push_back(std::move(key));
    return k;
  }();
  return all;
}

const RunKey* find(const std::string& section, const std::string& name) {
  for (const RunKey& k : keys())
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

const std::vector<std::string>& sections() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> s = {"model"};
    for (const RunKey& k : keys())
      if (std::find(s.begin(), s.end(), k.section) == s.end()) s.push_back(k.section);
    return s;
  }();
  return all;
}

bool is_section(const std::string& name) {
  return std::find(sections().begin(), sections().end(), name) != sections().end();
}

std::vector<std::string> key_names(const std::string& section) {
  std::vector<std::string> names;
  for (const RunKey& k : keys())
    if (k.section == section) names.push_back(k.name);
  return names;
}

std::string key_list(const std::string& section) { return config::join(key_names(section)); }

std::string unknown_key_hint(const std::string& section, const std::string& key) {
  if (std::string near = config::did_you_mean(key, key_names(section)); !near.empty()) return near;
  for (const std::string& other : sections())
    if (other != section && find(other, key) != nullptr)
      return " (" + key + " is a key of section " + other + ")";
  return foreign_name_hint(section + "." + key);
}

bool is_task_own_key(const std::string& name) { return find("task", name) != nullptr; }

std::string yaml_quote(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20 || ch == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);  // UTF-8 bytes pass through unchanged
        }
    }
  }
  return out + "\"";
}

}  // namespace gtpo::rl::schema
