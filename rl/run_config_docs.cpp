// config_reference() and docs/configuration.md, generated from the schema so the docs cannot drift.
#include <algorithm>
#include <map>
#include <sstream>

#include "data/tasks/registry.h"
#include "rl/foreign_names.h"
#include "rl/math/algorithm_registry.h"
#include "rl/run_config.h"
#include "rl/run_config_schema.h"

namespace gtpo::rl {
namespace {

// Appended to the meaning of RL keys whose default differs between algorithms.
constexpr const char* kAlgoNote = " (default depends on rl.algo)";

// rl.* and every algorithm's own section.
bool is_rl_section(const std::string& s) {
  if (s == "rl") return true;
  for (const RlKey& k : rl_keys())
    if (k.section == s) return true;
  return false;
}

// (key, default of every algorithm in registration order) for the RL keys whose defaults differ.
std::vector<std::pair<std::string, std::vector<std::string>>> per_algorithm_defaults() {
  std::vector<std::vector<std::pair<std::string, std::string>>> values;
  for (const std::string& algo : algorithm_names()) {
    RunConfig c;
    c.rl = defaults_for(algo);
    std::vector<std::pair<std::string, std::string>> row;
    for (const RunKey& k : schema::keys())
      if (is_rl_section(k.section) && k.name != "algo") row.emplace_back(k.dotted(), k.get(c));
    values.push_back(row);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> table;
  for (size_t i = 0; i < values[0].size(); ++i) {
    std::vector<std::string> cells;
    bool differ = false;
    for (const auto& row : values) {
      cells.push_back(row[i].second);
      differ = differ || row[i].second != values[0][i].second;
    }
    if (differ) table.emplace_back(values[0][i].first, cells);
  }
  return table;
}

// A table cell in code style; '|' must be escaped even inside code spans in GitHub tables.
std::string code_cell(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return "`" + out + "`";
}

const std::map<std::string, std::string>& section_intros() {
  static const std::map<std::string, std::string> intros = {
      {"model",
       "The transformer's shape, with Hugging Face key names. Optional when `train.init_from` names a "
       "checkpoint (the checkpoint's model is used)."},
      {"tokenizer", "How text becomes token ids."},
      {"task",
       "Where problems come from and how answers are checked. Every key other than those below is an "
       "option of the named task, checked when the config is loaded."},
      {"prompt",
       "How prompts become model text: as they are by default; conversational rows (`messages`, or TRL's "
       "conversational `prompt`) through the tokenizer's chat template (`docs/chat-templates.md`)."},
      {"sampler", "Rollouts: how responses are sampled during RL."},
      {"rl",
       "The RL algorithm and its shared switches (formulas in `docs/algorithms.md`). `rl.algo` is applied "
       "first and sets the defaults of every other RL key; the defaults shown are those of `gtpo`, and the "
       "keys marked * have other defaults for other algorithms (table at the end)."},
      {"dapo_forking", "Read by `dapo_forking` only."},
      {"gtpo", "Token-level shaping of `gtpo` (read by `gtpo` only)."},
      {"grpo_s", "Sequence-level shaping of `grpo_s` (read by `grpo_s` only)."},
      {"clip_cov",
       "Clip-Cov's token selection, read when `rl.policy_loss` is `clip_cov` (the `clip_cov` algorithm's "
       "default; docs/algorithms.md)."},
      {"kl_cov",
       "KL-Cov's token selection and penalty, read when `rl.policy_loss` is `kl_cov` (the `kl_cov` "
       "algorithm's "
       "default)."},
      {"entropy_adv",
       "The entropy advantage ψ = min(α·H, |A|/κ) of `entropy_adv` (read by `entropy_adv` only)."},
      {"reward",
       "The reward r_i of each response: the weighted sum of the functions listed in `reward.functions`, a "
       "list of mappings (`- {name: correct, weight: 1}`). Without the list, r_i is the task's verifier "
       "(1 correct, 0 not) and every algorithm behaves as without this section. Built-ins: `correct` (the "
       "task's verifier), `format` (1 for a well-formed answer line, `docs/tasks.md`), `length` "
       "(−|o_i| / `sampler.max_new_tokens`); a function with a `command` is external: a long-lived process "
       "speaking JSON lines (`docs/rewards.md`). What each algorithm does with r_i: `docs/algorithms.md`."},
      {"teacher",
       "On-policy distillation: a frozen teacher of the run's vocabulary scores every sampled token, and "
       "each "
       "token's reward gains weight · (log π_teacher − log π_student), beside the reward functions' "
       "(`docs/rewards.md`, \"Distillation from a teacher\"). Off while `teacher.path` is empty."},
      {"optim", "AdamW and the learning-rate schedule of the RL updates."},
      {"sft",
       "Supervised warm start on the task's reference solutions (loss on answer tokens only), run before "
       "RL."},
      {"train", "The RL run: its length, seed and run directory."},
      {"eval", "Evaluation on test problems: greedy accuracy, mean@k and pass@k."},
      {"log", "Terminal output and logged samples."},
  };
  return intros;
}

}  // namespace

std::vector<ConfigKeyDoc> config_reference() {
  std::vector<ConfigKeyDoc> docs;
  for (const model::ModelKey& k : model::model_keys()) docs.push_back({k.dotted(), k.type, k.default_doc, k.meaning});
  const RunConfig defaults;
  std::vector<std::string> differ;
  for (const auto& [key, cells] : per_algorithm_defaults()) differ.push_back(key);
  for (const RunKey& k : schema::keys()) {
    std::string value = !k.default_doc.empty() ? k.default_doc : k.is_item() ? std::string() : k.get(defaults);
    if (k.quoted && value.empty()) value = "\"\"";
    std::string meaning = k.meaning;
    if (std::find(differ.begin(), differ.end(), k.dotted()) != differ.end()) meaning += kAlgoNote;
    docs.push_back({k.dotted(), k.type, value, meaning});
  }
  return docs;
}

std::string config_reference_markdown() {
  std::ostringstream md;
  md << "# Configuration\n\n"
     << "<!-- Generated from the schema rows (rl/run_config_schema.h lists their owners) by "
        "config_reference_markdown()\n"
     << "     (rl/run_config_docs.cpp); a test keeps this file equal to it. After changing a key, "
        "regenerate:\n"
     << "     ./build/tests/test_rl \"[regenerate-config-doc]\" -->\n\n"
     << "`gtpo sft`, `gtpo train` and `gtpo eval` read a YAML run config made of the sections below. Every "
        "key has "
        "a default, so a config holds only what differs from it:\n\n"
     << "```yaml\nmodel: {hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 4, "
        "max_position_embeddings: 128}\ntask: {name: arith, difficulty: 2}\nrl: {algo: dapo}\n```\n\n"
     << "- Dotted overrides after the file name win over the file and are checked the same way:\n"
     << "  `gtpo train configs/quickstart.yaml train.steps=200 rl.algo=grpo gtpo.alpha2=0.2`.\n"
     << "- Unknown sections and keys are errors that list the valid ones; a value of the wrong type is an "
        "error\n"
     << "  naming `section.key`, the expected type and the value; YAML syntax errors give the file and "
        "line.\n"
     << "- An unknown key gets the nearest valid name (`rl.clip_hihg`: did you mean `clip_high`), the "
        "section "
        "that has it\n"
     << "  (`rl.lr`: a key of section optim), or the gtpo key of a TRL or verl name (`rl.beta`: TRL's `beta` "
        "is "
        "`rl.kl_coef`;\n"
     << "  the TRL / verl column below lists them; verl's are paths in its `ppo_trainer.yaml`).\n"
     << "- `~section.key` on the command line sets a key back to its default (it drops the file's value).\n"
     << "- A key given twice, in any section, is an error naming both lines.\n"
     << "- Booleans are spelled alike in every section: `true`/`false`, `on`/`off`, `yes`/`no`, `1`/`0`.\n"
     << "- `task.name=NAME` on the command line drops the file's options of another task that NAME does not "
        "take, with a note.\n"
     << "- There is no top-level `seed`: the run's seed is `train.seed`.\n"
     << "- A run directory gets `config.yaml`, the resolved config with every key; it loads back as is.\n";
  std::map<std::string, std::vector<ConfigKeyDoc>> by_section;
  for (const ConfigKeyDoc& d : config_reference()) by_section[d.key.substr(0, d.key.find('.'))].push_back(d);
  for (const std::string& section : schema::sections()) {
    md << "\n## `" << section << "`\n\n" << section_intros().at(section) << "\n\n";
    md << "| Key | Type | Default | Meaning | TRL / verl |\n|---|---|---|---|---|\n";
    for (const ConfigKeyDoc& d : by_section[section]) {
      // The note config_reference() appends becomes a star here; the table at the end has the values.
      std::string meaning = d.meaning;
      const auto note = meaning.find(kAlgoNote);
      if (note != std::string::npos) meaning.erase(note);
      md << "| `" << d.key << "`" << (note != std::string::npos ? " *" : "") << " | " << code_cell(d.type)
         << " | " << (section == "model" ? d.default_value : code_cell(d.default_value)) << " | " << meaning
         << " | " << foreign_names_cell(d.key) << " |\n";
    }
    if (section == "task") {
      md << "\nTask options (defaults and ranges in `docs/tasks.md`):\n\n";
      for (const std::string& task : data::task_names())
        md << "- `" << task << "`: " << config::join(data::task_option_names(task)) << "\n";
    }
  }
  md << "\n## Per-algorithm RL defaults\n\nKeys whose defaults depend on `rl.algo`; every other RL key has "
        "the "
        "same default for all algorithms.\n\n| Key |";
  const std::vector<std::string> algos = algorithm_names();
  for (const std::string& a : algos) md << " `" << a << "` |";
  md << "\n|---|";
  for (size_t i = 0; i < algos.size(); ++i) md << "---|";
  md << "\n";
  for (const auto& [key, cells] : per_algorithm_defaults()) {
    md << "| `" << key << "` |";
    for (const std::string& v : cells) md << " " << code_cell(v) << " |";
    md << "\n";
  }
  return md.str();
}

}  // namespace gtpo::rl
