// The one schema of run-config keys (internal to rl/). Each row (config::Key<RunConfig>) knows its section,
// name, type, meaning, how to set it from text and how to print it back, so parsing, overrides, the
// resolved YAML and docs/configuration.md all come from the same rows. The rows are declared by the code
// that reads them; this header only names the owners, and keys() lists them in documentation order.
#pragma once
#include <string>
#include <vector>

#include "rl/run_config.h"

namespace gtpo::rl::schema {

// The owners' rows (each defined in the file that reads the section).
std::vector<RunKey> tokenizer_and_task_keys();  // rl/run_config_schema.cpp
std::vector<RunKey> prompt_keys();              // rl/prompt_template.cpp
std::vector<RunKey> sampler_keys();             // rl/rollout_phase.cpp
std::vector<RunKey>
rl_section_keys();  // rl.algo here; the rest from rl_keys() (rl/math/algorithm_registry.cpp)
std::vector<RunKey> reward_keys();              // rl/reward.cpp
std::vector<RunKey> teacher_keys();             // rl/distillation.cpp
std::vector<RunKey> optim_keys();               // rl/trainer_keys.cpp
std::vector<RunKey> sft_keys();                 // rl/sft.cpp
std::vector<RunKey> train_keys();               // rl/trainer_keys.cpp
std::vector<RunKey> eval_keys();                // rl/evaluate.cpp
std::vector<RunKey> log_keys();                 // rl/trainer_keys.cpp

// Every row but the model section's (model::model_keys()), in documentation order.
const std::vector<RunKey>& keys();
// Nullptr when SECTION has no key NAME (a list item's row is named "LIST[].FIELD").
const RunKey* find(const std::string& section, const std::string& name);
// The sections of a config file, in documentation order (model first).
const std::vector<std::string>& sections();
bool is_section(const std::string& name);
// Names of SECTION's rows, comma-separated, for "valid keys" errors.
std::string key_list(const std::string& section);
// The same names as a list (for "did you mean").
std::vector<std::string> key_names(const std::string& section);
// What to say about an unknown KEY of SECTION beyond the valid keys: the nearest valid name, the section
// that does have it, or the gtpo key of a TRL or verl name ("" when nothing fits).
std::string unknown_key_hint(const std::string& section, const std::string& key);
// Keys of the task section that are the section's own; every other key is a task option.
bool is_task_own_key(const std::string& name);

// A YAML double-quoted scalar: every byte that YAML would read differently is escaped.
std::string yaml_quote(const std::string& text);

// Learning-rate schedule names as a codec (optim.schedule, sft.schedule).
config::Codec<optim::LrScheduleKind> schedule_codec();

}  // namespace gtpo::rl::schema
