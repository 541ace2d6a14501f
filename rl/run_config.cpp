#include "rl/run_config.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <sstream>

#include "data/tasks/registry.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::rl {
namespace {

// One key's value from the file or the command line, kept until every source is read so that rl.algo
// (which resets the RL keys) can be applied first wherever it was given.
struct Assignment {
  std::string where;  // "config.yaml:12" or "command line"
  std::string section, key, value;
};

struct Sources {
  std::vector<Assignment> values;
  bool has_model = false;
  YAML::Node model;  // the file's model section, when has_model
  std::vector<std::pair<std::string, std::string>> model_overrides;
};

std::string line_of(const std::string& where, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  return m.is_null() ? where : where + ":" + std::to_string(m.line + 1);
}

[[noreturn]] void unknown_section(const std::string& where, const std::string& name) {
  const std::string hint = name == "seed" ? " (the seed is train.seed)" : "";
  fail(where, ": unknown section '", name, "'", hint, "; valid sections: ", schema::join(schema::sections()));
}

// A scalar's text; null (`key:` with nothing after it) reads as the empty string.
std::string scalar_text(const std::string& where, const std::string& dotted, const YAML::Node& value) {
  if (value.IsNull()) return "";
  GTPO_CHECK(value.IsScalar(), where, ": ", dotted, " must be a single value, not a ",
             value.IsSequence() ? "list" : "mapping");
  return value.Scalar();
}

YAML::Node load_yaml(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    fail(where, ":", e.mark.line + 1, ":", e.mark.column + 1, ": YAML syntax error: ", e.msg);
  }
}

void read_file_values(const std::string& text, const std::string& where, Sources& out) {
  const YAML::Node root = load_yaml(text, where);
  if (root.IsNull()) return;  // an empty file: every default
  GTPO_CHECK(root.IsMap(), where, ": a run config must be a mapping of sections (",
             schema::join(schema::sections()), ")");
  std::set<std::string> seen;
  for (const auto& section : root) {
    const std::string name = section.first.Scalar();
    const std::string at = line_of(where, section.first);
    if (!schema::is_section(name)) unknown_section(at, name);
    GTPO_CHECK(seen.insert(name).second, at, ": section '", name, "' appears twice");
    if (section.second.IsNull()) continue;  // "train:" with nothing under it
    GTPO_CHECK(section.second.IsMap(), at, ": section '", name, "' must be a mapping of keys to values");
    if (name == "model") {
      out.has_model = true;
      out.model = section.second;
      continue;
    }
    std::set<std::string> keys;
    for (const auto& kv : section.second) {
      const std::string key = kv.first.Scalar();
      const std::string key_at = line_of(where, kv.first);
      GTPO_CHECK(keys.insert(key).second, key_at, ": ", name, ".", key, " appears twice");
      out.values.push_back({key_at, name, key, scalar_text(key_at, name + "." + key, kv.second)});
    }
  }
}

void read_overrides(const ConfigOverrides& overrides, Sources& out) {
  const std::string where = "command line";
  for (const auto& [dotted, value] : overrides) {
    const auto dot = dotted.find('.');
    GTPO_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < dotted.size(), where, ": override '", dotted,
               "=", value, "' must look like section.key=value");
    const std::string section = dotted.substr(0, dot);
    const std::string key = dotted.substr(dot + 1);
    if (!schema::is_section(section)) unknown_section(where, section);
    if (section == "model")
      out.model_overrides.emplace_back(key, value);
    else
      out.values.push_back({where, section, key, value});
  }
}

void apply(RunConfig& c, const Assignment& a) {
  if (a.section == "task" && !schema::is_task_own_key(a.key)) {
    c.task.options.set(a.key, a.value);  // a task option: make_task judges it once the name is known
    return;
  }
  const schema::Key* k = schema::find(a.section, a.key);
  if (k == nullptr)
    fail(a.where, ": unknown key '", a.key, "' in section '", a.section,
         "'; valid keys: ", schema::key_list(a.section));
  try {
    k->set(c, a.value);
  } catch (const Error& e) {
    fail(a.where, ": ", k->dotted(), ": ", e.what());
  }
}

// The model section through parse_model_config, with overrides merged into the node first so that the
// defaults derived from other keys (intermediate_size from hidden_size, ...) follow the overridden values.
std::optional<model::ModelConfig> build_model(const Sources& s, const std::string& where) {
  if (!s.has_model && s.model_overrides.empty()) return std::nullopt;
  YAML::Node node = s.has_model ? YAML::Clone(s.model) : YAML::Node(YAML::NodeType::Map);
  for (const auto& [key, value] : s.model_overrides) node[key] = value;
  // vocab_size may be left to the tokenizer: parse with a placeholder and mark it 0.
  const bool vocab_from_tokenizer = !node["vocab_size"];
  if (vocab_from_tokenizer) node["vocab_size"] = 1;
  const std::string model_where = s.model_overrides.empty() ? where : where + " with command-line overrides";
  model::ModelConfig m = model::parse_model_config(node, model_where);
  if (vocab_from_tokenizer) m.vocab_size = 0;
  return m;
}

// Rules that span keys; each message names the keys involved.
void validate(const RunConfig& c, const std::string& where) {
  GTPO_CHECK(c.task.train_file.empty() == c.task.test_file.empty(), where,
             ": task.train_file and task.test_file go together: give both or neither");
  try {
    (void)data::make_task(c.task.name, c.task.options);
  } catch (const Error& e) {
    fail(where, ": ", e.what());
  }
  GTPO_CHECK(c.model || !c.train.init_from.empty(), where,
             ": the model section is required unless train.init_from names a checkpoint");
  GTPO_CHECK(c.tokenizer.kind != TokenizerKind::File || !c.tokenizer.file.empty(), where,
             ": tokenizer.kind is file but tokenizer.file is empty");
  GTPO_CHECK(c.tokenizer.kind == TokenizerKind::File || c.tokenizer.file.empty(), where,
             ": tokenizer.file is set but tokenizer.kind is not file");
  GTPO_CHECK(c.tokenizer.kind == TokenizerKind::Char || c.tokenizer.alphabet.empty(), where,
             ": tokenizer.alphabet is only for tokenizer.kind char");
  GTPO_CHECK(c.optim.schedule != optim::LrScheduleKind::constant || c.optim.warmup_steps == 0, where,
             ": optim.warmup_steps needs optim.schedule constant_with_warmup or cosine");
  GTPO_CHECK(c.sft.schedule != optim::LrScheduleKind::constant || c.sft.warmup_steps == 0, where,
             ": sft.warmup_steps needs sft.schedule constant_with_warmup or cosine");
  GTPO_CHECK(c.train.matmul_precision == MatmulPrecision::fp32 || c.train.device == Device::cuda, where,
             ": train.matmul_precision ", matmul_precision_name(c.train.matmul_precision),
             " needs train.device cuda (tf32 and bf16 are GPU-only; the CPU computes in fp32)");
  GTPO_CHECK(c.rl.mini_batch_prompts <= c.train.prompts_per_step, where, ": rl.mini_batch_prompts (",
             c.rl.mini_batch_prompts, ") exceeds train.prompts_per_step (", c.train.prompts_per_step, ")");
}

}  // namespace

RunConfig parse_run_config(const std::string& yaml_text, const std::string& where,
                           const ConfigOverrides& overrides) {
  Sources s;
  read_file_values(yaml_text, where, s);
  read_overrides(overrides, s);
  RunConfig c;
  // rl.algo resets every RL key to the algorithm's defaults: apply it (the last one given) before the rest.
  const auto is_algo = [](const Assignment& a) { return a.section == "rl" && a.key == "algo"; };
  for (const Assignment& a : s.values)
    if (is_algo(a)) apply(c, a);
  for (const Assignment& a : s.values)
    if (!is_algo(a)) apply(c, a);
  c.model = build_model(s, where);
  validate(c, where);
  return c;
}

RunConfig load_run_config(const std::string& path, const ConfigOverrides& overrides) {
  return parse_run_config(io::read_file(path), path, overrides);
}

std::pair<std::string, std::string> split_override(const std::string& arg) {
  const auto eq = arg.find('=');
  GTPO_CHECK(eq != std::string::npos && eq > 0, "command line: override '", arg,
             "' must look like section.key=value");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::string resolved_config_yaml(const RunConfig& c) {
  std::ostringstream os;
  os << "# Resolved run config: every key with the value this run used.\n";
  if (c.model) {
    std::string model = model::model_config_to_yaml(*c.model);
    // vocab_size 0 means "the tokenizer's"; leaving the key out says the same on reading it back.
    if (c.model->vocab_size == 0) {
      const auto at = model.find("  vocab_size: 0\n");
      if (at != std::string::npos) model.erase(at, std::string("  vocab_size: 0\n").size());
    }
    os << model;
  }
  for (const std::string& section : schema::sections()) {
    if (section == "model") continue;
    os << section << ":\n";
    for (const schema::Key& k : schema::keys()) {
      if (k.section != section) continue;
      const std::string value = k.get(c);
      os << "  " << k.name << ": " << (k.quoted ? schema::yaml_quote(value) : value) << "\n";
    }
    // The task's own options sit in its section beside its fixed keys.
    if (section == "task")
      for (const auto& [key, v] : c.task.options.values())
        os << "  " << key << ": " << schema::yaml_quote(v) << "\n";
  }
  return os.str();
}

}  // namespace gtpo::rl
