// RLOO, REINFORCE Leave-One-Out (Kool et al. 2019; Ahmadian et al. 2024, "Back to Basics"): each response's
// baseline is the mean reward of the other K - 1 responses of its prompt,
//   Â_i = r_i − (1/(K−1)) Σ_{j≠i} r_j = K/(K−1) · (r_i − mean_K r),
// the same Â_i on every token of o_i, no division by the group's standard deviation. A group of one response
// has no other response to compare with: Â = 0. The loss is the clipped surrogate with PPO's 0.2 and a
// token mean, as verl's rloo advantage estimator runs with its default actor loss.
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"
#include "rl/math/sequence_advantage.h"

namespace gtpo::rl::algorithms {
namespace {

// Dr. GRPO's centred advantage r_i − mean_K r, scaled by K/(K−1).
void compute(const AlgorithmInput& in, AdvantageResult& out) {
  std::vector<double> reward(in.batch.size());
  for (std::size_t i = 0; i < in.batch.size(); ++i) reward[i] = outcome_reward(in.batch[i]) + in.penalty[i];
  set_group_sequence_advantages(in, reward, /*divide_by_std=*/false, out);
  for (const std::vector<int>& group : in.groups) {
    const double k = static_cast<double>(group.size());
    if (k < 2) continue;  // a lone response is already 0
    for (int i : group) {
      ResponseResult& r = out.responses[i];
      r.seq_advantage = static_cast<float>(k / (k - 1.0) * r.seq_advantage);
      r.advantages.assign(r.advantages.size(), r.seq_advantage);
    }
  }
}

}  // namespace

Algorithm rloo() {
  return {.name = "rloo",
          .summary = "RLOO: r = c, A = r - mean of the other K-1 responses, token-mean",
          .set_defaults = verl_defaults,
          .compute = compute};
}

}  // namespace gtpo::rl::algorithms
