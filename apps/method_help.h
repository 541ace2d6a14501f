// The lists of methods that --help texts print, generated from the registries (rl/math/algorithm_registry.h,
// rl/math/losses/loss.h), so that no help text names them by hand.
#pragma once
#include <string>

#include "rl/math/algorithm.h"

namespace gtpo::apps {

// One line per registered algorithm: "  NAME  summary".
std::string algorithm_lines();
// One line per token loss of rl.policy_loss, and the sequence loss of the sequence-level algorithms.
std::string policy_loss_lines();
// The names, joined with ", ", of the algorithms whose FLAG (&rl::Algorithm::needs_entropies, ...) is VALUE.
std::string algorithm_names_where(bool rl::Algorithm::*flag, bool value);

}  // namespace gtpo::apps
