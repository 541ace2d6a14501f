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
Algorithm reinforce_pp();
Algorithm gspo();
Algorithm cispo();
Algorithm clip_cov();
Algorithm kl_cov();
Algorithm entropy_adv();

}  // namespace gtpo::rl::algorithms
