#include "rl/math/grouping.h"

#include <map>

namespace gtpo::rl {

Grouping group_responses(const std::vector<Response>& batch) {
  Grouping g;
  std::map<std::string, std::size_t> index;  // lookup only; order comes from first appearance
  for (std::size_t i = 0; i < batch.size(); ++i) {
    auto [it, inserted] = index.emplace(batch[i].group, g.ids.size());
    if (inserted) {
      g.ids.push_back(batch[i].group);
      g.members.emplace_back();
    }
    g.members[it->second].push_back(static_cast<int>(i));
  }
  return g;
}

}  // namespace gtpo::rl
