// The GRPO family's outcome advantage (paper Eq. 1): one reward per response, normalised within its group,
// the same Â_i on every token.
#pragma once
#include <vector>

#include "rl/math/algorithm.h"

namespace gtpo::rl {

// reward is indexed like the batch. For every kept group: shaped = {r_i}, seq_advantage = Â_i and every
// token's advantage = Â_i, with Â_i = (r_i − mean_G r)/(std_G r + ε), or r_i − mean_G r when
// divide_by_std is false.
void set_group_sequence_advantages(const AlgorithmInput& in, const std::vector<double>& reward,
                                   bool divide_by_std, AdvantageResult& out);

}  // namespace gtpo::rl
