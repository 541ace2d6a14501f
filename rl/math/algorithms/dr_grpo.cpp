// Dr. GRPO (Liu et al. 2025): GRPO without the std division and with a constant loss normaliser.
#include "rl/math/algorithms/all.h"
#include "rl/math/sequence_advantage.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  c.clip_low = 0.2;
  c.clip_high = 0.2;
  c.loss_agg = LossAgg::SeqMeanTokenSumNorm;  // divide by G · max_len
  c.dynamic_sampling = false;
  c.overlong = Overlong::None;
}

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  std::vector<double> reward(in.batch.size());
  for (std::size_t i = 0; i < in.batch.size(); ++i) reward[i] = outcome_reward(in.batch[i]) + in.penalty[i];
  set_group_sequence_advantages(in, reward, /*divide_by_std=*/false, out);  // Â_i = r_i − mean_G r
}

}  // namespace

Algorithm dr_grpo() {
  return {.name = "dr_grpo",
          .summary = "Dr. GRPO: r = c, A = r - mean (no std), seq-mean-token-sum-norm",
          .set_defaults = defaults,
          .compute = compute};
}

}  // namespace gtpo::rl::algorithms
