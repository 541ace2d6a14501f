// One factory per file in rl/math/algorithms/.
#pragma once
#include "rl/math/algorithm.h"

namespace gtpo::rl::algorithms {

Algorithm grpo();
Algorithm dr_grpo();
Algorithm dapo();
Algorithm dapo_forking();
Algorithm gtpo();
Algorithm grpo_s();
Algorithm rloo();

}  // namespace gtpo::rl::algorithms
