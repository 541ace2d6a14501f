// REINFORCE++ with a baseline (Hu et al. 2025; verl's reinforce_plus_plus_baseline, OpenRLHF's
// reinforce_baseline): the group mean is the baseline, then the advantages are whitened over every loss
// token of the batch instead of within the group,
//   a_i = r_i − mean_g r   (a group of one response has baseline 0: a_i = r_i, as verl),
//   Â_t = (a_t − μ) / sqrt(σ² + 1e-8),  μ, σ² the mean and unbiased variance of a over the batch's loss
//   tokens,
// so a long response weighs more in μ and σ than a short one. With fewer than two loss tokens, or all
// advantages equal, Â = 0. The loss is PPO's clipped surrogate with 0.2 and a token mean (verl's defaults).
#include <cmath>

#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"

namespace gtpo::rl::algorithms {
namespace {

// a_i = r_i − mean_g r on every token of o_i.
void centre_in_groups(const AlgorithmInput& in, AdvantageResult& out) {
  for (const std::vector<int>& group : in.groups) {
    double mean = 0.0;
    if (group.size() > 1) {
      for (int i : group) mean += outcome_reward(in.batch[i]) + in.penalty[i];
      mean /= static_cast<double>(group.size());
    }
    for (int i : group) {
      ResponseResult& r = out.responses[i];
      const double reward = outcome_reward(in.batch[i]) + in.penalty[i];
      r.shaped = {static_cast<float>(reward)};
      r.seq_advantage = static_cast<float>(reward - mean);
    }
  }
}

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  centre_in_groups(in, out);
  double n = 0.0, sum = 0.0;
  for (const std::vector<int>& group : in.groups)
    for (int i : group)
      for (uint8_t m : out.responses[i].loss_mask)
        if (m) n += 1.0, sum += out.responses[i].seq_advantage;
  const double mean = n > 0 ? sum / n : 0.0;
  double sq = 0.0;
  for (const std::vector<int>& group : in.groups)
    for (int i : group)
      for (uint8_t m : out.responses[i].loss_mask)
        if (m) sq += (out.responses[i].seq_advantage - mean) * (out.responses[i].seq_advantage - mean);
  const double scale = n > 1 ? 1.0 / std::sqrt(sq / (n - 1.0) + 1e-8) : 0.0;
  for (const std::vector<int>& group : in.groups)
    for (int i : group) {
      ResponseResult& r = out.responses[i];
      r.seq_advantage = sq > 0.0 ? static_cast<float>((r.seq_advantage - mean) * scale) : 0.0f;
      r.advantages.assign(r.advantages.size(), r.seq_advantage);
    }
}

}  // namespace

Algorithm reinforce_pp() {
  return {
      .name = "reinforce_pp",
      .summary = "REINFORCE++ (baseline): A = r - group mean, whitened over the batch's tokens, token-mean",
      .set_defaults = verl_defaults,
      .compute = compute};
}

}  // namespace gtpo::rl::algorithms
