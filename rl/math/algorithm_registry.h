// Algorithms by name.
#pragma once
#include <string>
#include <vector>

#include "rl/math/algorithm.h"

namespace gtpo::rl {

const std::vector<Algorithm>& all_algorithms();  // in registration order
std::vector<std::string> algorithm_names();
// Throws gtpo::Error listing the known names when name is unknown.
const Algorithm& find_algorithm(const std::string& name);

}  // namespace gtpo::rl
