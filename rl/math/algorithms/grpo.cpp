// GRPO (Shao et al. 2024) as the paper writes it (Eqs. 1-2).
#include "rl/math/algorithms/grpo.h"

#include "rl/math/algorithms/all.h"
#include "rl/math/sequence_advantage.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  c.clip_low = 0.2;
  c.clip_high = 0.2;
  c.loss_agg = LossAgg::SeqMeanTokenMean;  // Eq. 2: (1/G) Σ_i (1/|o_i|) Σ_t
  c.dynamic_sampling = false;
  c.overlong = Overlong::None;
}

}  // namespace

void verl_defaults(RlConfig& c) {
  c.clip_low = 0.2;
  c.clip_high = 0.2;
  c.loss_agg = LossAgg::TokenMean;
  c.dynamic_sampling = false;
  c.overlong = Overlong::None;
}

void grpo_compute(const AlgorithmInput& in, AdvantageResult& out) {
  std::vector<double> reward(in.batch.size());
  for (std::size_t i = 0; i < in.batch.size(); ++i)
    reward[i] = outcome_reward(in.batch[i]) +
                in.penalty[i];  // r_i = c_i or the reward functions' r_i (+ length penalty)
  set_group_sequence_advantages(in, reward, /*divide_by_std=*/true, out);  // Eq. 1
}

Algorithm grpo() {
  return {.name = "grpo",
          .summary = "GRPO: r = c in {0,1}, group z-score, seq-mean-token-mean",
          .set_defaults = defaults,
          .compute = grpo_compute};
}

}  // namespace gtpo::rl::algorithms
