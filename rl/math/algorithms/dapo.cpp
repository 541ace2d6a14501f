// DAPO (Yu et al. 2025) as the paper's baseline: ±1 reward, soft overlong punishment, clip-higher,
// token-mean loss, dynamic sampling.
#include "rl/math/algorithms/dapo.h"

#include "rl/math/algorithms/all.h"
#include "rl/math/sequence_advantage.h"

namespace gtpo::rl::algorithms {

void dapo_defaults(RlConfig& c) {
  c.clip_low = 0.2;
  c.clip_high = 0.28;
  c.loss_agg = LossAgg::TokenMean;
  c.dynamic_sampling = true;
  c.overlong = Overlong::DapoSoft;
}

void dapo_compute(const AlgorithmInput& in, AdvantageResult& out) {
  std::vector<double> reward(in.batch.size());
  for (std::size_t i = 0; i < in.batch.size(); ++i) {
    // r_i = 2c_i − 1 + R_overlong; the reward functions' r_i replaces 2c_i − 1 when the run lists them.
    const Response& r = in.batch[i];
    reward[i] = (r.reward ? *r.reward : is_correct(r) ? 1.0 : -1.0) + in.penalty[i];
  }
  set_group_sequence_advantages(in, reward, /*divide_by_std=*/true, out);  // Eq. 1
}

Algorithm dapo() {
  return {
      .name = "dapo",
      .summary = "DAPO: r = +-1 + soft overlong, group z-score, clip-higher, token-mean, dynamic sampling",
      .set_defaults = dapo_defaults,
      .compute = dapo_compute};
}

}  // namespace gtpo::rl::algorithms
