#include "rl/run_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "data/tasks/registry.h"
#include "rl/foreign_names.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/losses/loss.h"
#include "rl/reward.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/input_file.h"
#include "runtime/io/yaml_config.h"

namespace gtpo::rl {
// The first line of resolved_config_yaml's text, which tells a run's own config.yaml from a user's.
constexpr const char* kResolvedConfigHeader =
    "# Resolved run config: every key with the value this run used.\n";

namespace {

using io::ConfigValue;

// NAME is the section; DOTTED what was written (a command line's whole section.key, or the section name).
[[noreturn]] void unknown_section(const std::string& where, const std::string& name,
                                  const std::string& dotted) {
  // A TRL or verl path as written, a misspelt section, a key of ours under another section, a TRL or verl
  // key under any section: the first that fits.
  std::string hint = name == "seed" ? " (the seed is train.seed)" : foreign_name_hint(dotted, /*exact=*/true);
  if (hint.empty()) hint = config::did_you_mean(name, schema::sections());
  const std::string key = dotted.substr(dotted.rfind('.') + 1);
  if (hint.empty() && dotted != name)
    for (const std::string& section : schema::sections())
      if (hint.empty() && schema::find(section, key) != nullptr)
        hint = " (" + key + " is a key of section " + section + ")";
  if (hint.empty()) hint = foreign_name_hint(dotted);
  fail(where, ": unknown section '", name, "'", hint, "; valid sections: ", config::join(schema::sections()));
}

// Every value of the file, section by section, in file order.
std::vector<ConfigValue> read_file_values(const std::string& text, const std::string& where) {
  std::vector<ConfigValue> out;
  const YAML::Node root = io::load_yaml(text, where);
  if (root.IsNull()) return out;  // an empty file: every default
  GTPO_CHECK(root.IsMap(), where, ": a run config must be a mapping of sections (",
             config::join(schema::sections()), ")");
  std::map<std::string, std::string> first_line;
  for (const auto& section : root) {
    const std::string name = section.first.Scalar();
    const std::string at = io::line_of(where, section.first);
    if (!schema::is_section(name)) unknown_section(at, name, name);
    const auto [seen, inserted] = first_line.emplace(name, at);
    GTPO_CHECK(inserted, at, ": section '", name, "' appears twice (first at ", seen->second, ")");
    GTPO_CHECK(section.second.IsNull() || section.second.IsMap(), at, ": section '", name,
               "' must be a mapping of keys to values");
    for (ConfigValue& v : io::read_yaml_section(section.second, where, name)) out.push_back(std::move(v));
  }
  return out;
}

// Appends the command line's assignments; "~section.key" removes every earlier assignment of that key, so
// the key falls back to its default.
void apply_overrides(const ConfigOverrides& overrides, std::vector<ConfigValue>& values) {
  const std::string where = "command line";
  for (const auto& [raw, value] : overrides) {
    const bool unset = !raw.empty() && raw[0] == '~';
    const std::string dotted = unset ? raw.substr(1) : raw;
    const auto dot = dotted.find('.');
    GTPO_CHECK(dot != std::string::npos && dot > 0 && dot + 1 < dotted.size(), where, ": override '", raw,
               unset ? "" : "=" + value, "' must look like section.key=value or ~section.key",
               foreign_name_hint(dotted));
    const std::string section = dotted.substr(0, dot), key = dotted.substr(dot + 1);
    if (!schema::is_section(section)) unknown_section(where, section, dotted);
    if (unset) {  // "~reward.functions" drops every item of the list
      std::erase_if(values, [&](const ConfigValue& v) {
        return v.section == section && (v.key == key || v.key.rfind(key + "[", 0) == 0);
      });
      continue;
    }
    values.push_back({where, section, key, value});
  }
}

// A command-line task.name that changes the task drops the file's options the new task does not take,
// with a note, instead of failing on options the user never meant for it.
void drop_other_task_options(std::vector<ConfigValue>& values, std::vector<std::string>& notes) {
  std::string file_task, final_task;
  bool name_from_command_line = false;
  for (const ConfigValue& v : values)
    if (v.section == "task" && v.key == "name") {
      if (v.where != "command line") file_task = v.value;
      final_task = v.value;
      name_from_command_line = v.where == "command line";
    }
  if (!name_from_command_line || final_task == file_task) return;
  const std::vector<std::string> names = data::task_names();
  if (std::find(names.begin(), names.end(), final_task) == names.end()) return;  // make_task names the error
  const std::vector<std::string> valid = data::task_option_names(final_task);
  std::vector<std::string> dropped;
  std::erase_if(values, [&](const ConfigValue& v) {
    const bool drop = v.section == "task" && v.where != "command line" && !schema::is_task_own_key(v.key) &&
                      std::find(valid.begin(), valid.end(), v.key) == valid.end();
    if (drop) dropped.push_back(v.key + " (" + v.where + ")");
    return drop;
  });
  if (!dropped.empty())
    notes.push_back("task.name=" + final_task + " on the command line: dropped the file's options of task " +
                    (file_task.empty() ? std::string(TaskSection{}.name) : file_task) + " that " + final_task +
                    " does not take: " + config::join(dropped));
}

void apply(RunConfig& c, const ConfigValue& a) {
  if (a.section == "task" && !schema::is_task_own_key(a.key)) {
    c.task.options.set(a.key, a.value);  // a task option: make_task judges it once the name is known
    return;
  }
  std::string list, field;
  std::size_t index = 0;
  const bool item = config::split_item_key(a.key, list, index, field);
  const RunKey* k = schema::find(a.section, item ? list + "[]." + field : a.key);
  if (k == nullptr)
    fail(a.where, ": unknown key '", a.key, "' in section '", a.section, "'",
         schema::unknown_key_hint(a.section, a.key), "; valid keys: ", schema::key_list(a.section));
  if (!item && k->is_item())
    fail(a.where, ": ", k->dotted(), " is a key of the items of a list; name the item: ", a.section, ".",
         k->list(), "[0].", k->item_field());
  // A list's items come in order; an index beyond them would leave items with nothing set.
  GTPO_CHECK(!item || index <= k->count(c), a.where, ": ", a.section, ".", a.key, ": item ", index, " of ",
             a.section, ".", list, " follows only ", k->count(c), " item(s); give the items in order from 0");
  try {
    if (item)
      k->set_item(c, index, a.value);
    else
      k->set(c, a.value);
  } catch (const Error& e) {
    fail(a.where, ": ", item ? a.section + "." + a.key : k->dotted(), ": ", e.what());
  }
}

// The model section through model_config_from_values, file values and overrides together, so that the
// defaults derived from other keys (intermediate_size from hidden_size, ...) follow the overridden values.
std::optional<model::ModelConfig> build_model(const std::vector<ConfigValue>& values, const std::string& where) {
  std::vector<ConfigValue> model;
  bool has_vocab = false, from_command_line = false;
  for (const ConfigValue& v : values)
    if (v.section == "model") {
      model.push_back(v);
      has_vocab = has_vocab || v.key == "vocab_size";
      from_command_line = from_command_line || v.where == "command line";
    }
  if (model.empty()) return std::nullopt;
  // vocab_size may be left to the tokenizer: parse with a placeholder and mark it 0.
  if (!has_vocab) model.push_back({where, "model", "vocab_size", "1"});
  model::ModelConfig m =
      model::model_config_from_values(model, from_command_line ? where + " with command-line overrides" : where);
  if (!has_vocab) m.vocab_size = 0;
  return m;
}

// Whether the run reads V: an algorithm's own section (gtpo.*, ...) only under that algorithm, a loss's
// (clip_cov.*, kl_cov.*) only with that loss, and a few rl.* keys only with what they tune.
bool setting_is_read(const ConfigValue& v, const RlConfig& rl) {
  const PolicyLoss& loss = active_policy_loss(rl);
  if (v.section == "rl") {
    if (v.key == "rollout_correction_cap") return rl.rollout_correction != RolloutCorrection::None;
    if (v.key == "entropy_target_step") return rl.entropy_target > 0.0;
    if (v.key == "clip_low" || v.key == "clip_high") return loss.reads_clip_range;
    if (v.key == "dual_clip") return loss.reads_dual_clip;
    return true;
  }
  if (find_rl_key(v.section + "." + v.key) == nullptr) return true;  // not an RL setting
  for (const PolicyLoss& l : all_policy_losses())
    if (v.section == l.name) return &l == &loss;
  return v.section == rl.algo;
}

// Settings this run never reads are said, not silently ignored. A resolved config (a run's config.yaml,
// read on --resume) holds every key because gtpo wrote it: there only the command line's settings are the
// user's, and the first run already said the rest.
void note_unread_settings(const std::vector<ConfigValue>& values, bool resolved, RunConfig& c) {
  std::vector<std::string> unread;
  for (const ConfigValue& v : values)
    if (!setting_is_read(v, c.rl) && (!resolved || v.where == "command line"))
      unread.push_back(v.section + "." + v.key + " (" + v.where + ")");
  if (!unread.empty())
    c.notes.push_back("these settings have no effect with rl.algo " + c.rl.algo + " and rl.policy_loss " +
                      c.rl.policy_loss + ": " + config::join(unread));
  const bool token_rewards =
      !c.teacher.path.empty() || std::any_of(c.reward.functions.begin(), c.reward.functions.end(),
                                             [](const RewardFunctionConfig& f) { return f.token_rewards; });
  for (const ConfigValue& v : values) {
    if (resolved && v.where != "command line") continue;
    if (v.section == "reward" && v.key == "token_gamma" && !token_rewards)
      c.notes.push_back("reward.token_gamma (" + v.where +
                        ") has no effect: no reward function gives token rewards "
                        "(reward.functions[].token_rewards) and there is no teacher.path");
    if (v.section == "teacher" && v.key == "weight" && c.teacher.path.empty())
      c.notes.push_back("teacher.weight (" + v.where + ") has no effect without teacher.path");
  }
}

// Rules that span keys; each message names the keys involved.
void validate(const RunConfig& c, const std::string& where) {
  GTPO_CHECK(c.task.train_file.empty() == c.task.test_file.empty(), where,
             ": task.train_file and task.test_file go together: give both or neither");
  try {
    (void)data::make_task(c.task.name, c.task.options);  // its errors name the task and the option
  } catch (const Error& e) {
    fail(where, ": ", e.what());  // and this one the file
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
  GTPO_CHECK(c.rl.policy_loss == "clip" || find_algorithm(c.rl.algo).sequence_ratio == nullptr, where,
             ": rl.policy_loss ", c.rl.policy_loss, " is a per-token loss, and ", c.rl.algo,
             "'s loss is over sequences: it takes rl.policy_loss clip");
  validate_reward_section(c.reward, where);
}

}  // namespace

RunConfig parse_run_config(const std::string& yaml_text, const std::string& where,
                           const ConfigOverrides& overrides) {
  std::vector<ConfigValue> values = read_file_values(yaml_text, where);
  apply_overrides(overrides, values);
  RunConfig c;
  drop_other_task_options(values, c.notes);
  // rl.algo resets every RL key to the algorithm's defaults: apply it (the last one given) before the rest.
  const auto is_algo = [](const ConfigValue& a) { return a.section == "rl" && a.key == "algo"; };
  for (const ConfigValue& a : values)
    if (is_algo(a)) apply(c, a);
  for (const ConfigValue& a : values)
    if (!is_algo(a) && a.section != "model") apply(c, a);
  c.model = build_model(values, where);
  note_unread_settings(values, yaml_text.rfind(kResolvedConfigHeader, 0) == 0, c);
  validate(c, where);
  return c;
}

RunConfig load_run_config(const std::string& path, const ConfigOverrides& overrides) {
  io::check_input_file(path, io::kMaxConfigBytes, "config");
  return parse_run_config(io::read_file(path), path, overrides);
}

bool is_override(const std::string& arg) {
  if (!arg.empty() && arg[0] == '~') return arg.find('.') != std::string::npos && arg.find('=') == std::string::npos;
  const auto eq = arg.find('=');
  return eq != std::string::npos && eq > 0 && arg[0] != '-';
}

std::pair<std::string, std::string> split_override(const std::string& arg) {
  if (!arg.empty() && arg[0] == '~') {
    GTPO_CHECK(arg.find('=') == std::string::npos, "command line: '", arg,
               "': ~section.key sets a key back to its default and takes no value");
    return {arg, ""};
  }
  const auto eq = arg.find('=');
  GTPO_CHECK(eq != std::string::npos && eq > 0, "command line: override '", arg,
             "' must look like section.key=value (or ~section.key for the default)");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::string resolved_config_yaml(const RunConfig& c) {
  std::ostringstream os;
  os << kResolvedConfigHeader;
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
    std::vector<std::string> lists;
    for (const RunKey& k : schema::keys()) {
      if (k.section != section) continue;
      if (k.is_item()) {
        if (std::find(lists.begin(), lists.end(), k.list()) == lists.end()) lists.push_back(k.list());
        continue;
      }
      const std::string value = k.get(c);
      os << "  " << k.name << ": " << (k.quoted ? schema::yaml_quote(value) : value) << "\n";
    }
    // Each list after the section's single values, one mapping per item.
    for (const std::string& list : lists) {
      std::vector<const RunKey*> fields;
      for (const RunKey& k : schema::keys())
        if (k.section == section && k.is_item() && k.list() == list) fields.push_back(&k);
      const std::size_t n = fields.front()->count(c);
      os << "  " << list << ":" << (n == 0 ? " []" : "") << "\n";
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t f = 0; f < fields.size(); ++f) {
          const std::string value = fields[f]->get_item(c, i);
          os << (f == 0 ? "    - " : "      ") << fields[f]->item_field() << ": "
             << (fields[f]->quoted ? schema::yaml_quote(value) : value) << "\n";
        }
    }
    // The task's own options sit in its section beside its fixed keys.
    if (section == "task")
      for (const auto& [key, v] : c.task.options.values())
        os << "  " << key << ": " << schema::yaml_quote(v) << "\n";
  }
  return os.str();
}

}  // namespace gtpo::rl
