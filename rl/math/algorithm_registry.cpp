#include "rl/math/algorithm_registry.h"

#include "rl/math/algorithms/all.h"
#include "runtime/error.h"

namespace gtpo::rl {

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all = {
      algorithms::grpo(),        algorithms::dr_grpo(), algorithms::dapo(),     algorithms::dapo_forking(),
      algorithms::gtpo(),        algorithms::grpo_s(),  algorithms::rloo(),     algorithms::reinforce_pp(),
      algorithms::gspo(),        algorithms::cispo(),   algorithms::clip_cov(), algorithms::kl_cov(),
      algorithms::entropy_adv(),
  };
  return all;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Algorithm& a : all_algorithms()) names.emplace_back(a.name);
  return names;
}

const Algorithm& find_algorithm(const std::string& name) {
  for (const Algorithm& a : all_algorithms())
    if (name == a.name) return a;
  std::string known;
  for (const std::string& n : algorithm_names()) {
    if (!known.empty()) known += ", ";
    known += n;
  }
  fail("unknown algorithm '", name, "'; known algorithms: ", known);
}

}  // namespace gtpo::rl
