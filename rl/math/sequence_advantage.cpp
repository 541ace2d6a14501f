#include "rl/math/sequence_advantage.h"

#include "rl/math/zscore.h"

namespace gtpo::rl {

void set_group_sequence_advantages(const AlgorithmInput& in, const std::vector<double>& reward,
                                   bool divide_by_std, AdvantageResult& out) {
  for (const std::vector<int>& group : in.groups) {
    std::vector<double> adv;
    for (int i : group) adv.push_back(reward[i]);
    zscore_in_place(adv, in.cfg.eps, divide_by_std);
    for (std::size_t k = 0; k < group.size(); ++k) {
      ResponseResult& r = out.responses[group[k]];
      r.shaped = {static_cast<float>(reward[group[k]])};
      r.seq_advantage = static_cast<float>(adv[k]);
      r.advantages.assign(r.advantages.size(), r.seq_advantage);
    }
  }
}

}  // namespace gtpo::rl
