#include "rl/math/dynamic_sampling.h"

namespace gtpo::rl {

bool group_is_informative(const std::vector<Response>& batch, const std::vector<int>& members) {
  bool any_correct = false, any_incorrect = false;
  for (int i : members) (is_correct(batch[i]) ? any_correct : any_incorrect) = true;
  return any_correct && any_incorrect;
}

std::vector<bool> dynamic_sampling_keep(const std::vector<Response>& batch, const Grouping& groups) {
  std::vector<bool> keep;
  keep.reserve(groups.members.size());
  for (const auto& m : groups.members) keep.push_back(group_is_informative(batch, m));
  return keep;
}

}  // namespace gtpo::rl
