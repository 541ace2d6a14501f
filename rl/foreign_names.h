// The names TRL and verl give gtpo's config keys, in one table: the "did you mean" of an unknown key that
// is another stack's name (rl.beta, num_generations, trainer.total_training_steps) and the TRL / verl
// column of docs/configuration.md both read it.
#pragma once
#include <string>
#include <vector>

namespace gtpo::rl {

struct ForeignNames {
  const char* key;   // gtpo's section.key
  const char* trl;   // TRL's GRPOConfig / TrainingArguments field; "" when it has none
  const char* verl;  // verl's ppo_trainer.yaml path; "" when it has none
};

// Rows only for keys with a counterpart of the same meaning (up to units: TRL counts its batch in
// completions, gtpo in prompts, so such keys are left out).
const std::vector<ForeignNames>& foreign_names();

// For an unknown NAME (a key, or a dotted path such as verl's): " (TRL's beta is gtpo's rl.kl_coef)" when
// NAME, or (unless EXACT) its last dotted component, is a TRL or verl name in the table; else "".
std::string foreign_name_hint(const std::string& name, bool exact = false);

// The docs cell for KEY: "`beta` / `actor_rollout_ref.actor.kl_loss_coef`", "–" parts where a stack has none.
std::string foreign_names_cell(const std::string& key);

}  // namespace gtpo::rl
