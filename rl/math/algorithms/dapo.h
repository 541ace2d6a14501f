// DAPO's pieces, reused by the algorithms built on it.
#pragma once
#include "rl/math/algorithm.h"

namespace gtpo::rl::algorithms {

void dapo_defaults(RlConfig& c);
void dapo_compute(const AlgorithmInput& in, AdvantageResult& out);

}  // namespace gtpo::rl::algorithms
