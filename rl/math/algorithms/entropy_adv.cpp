// The entropy advantage (Cheng et al. 2025, "Reasoning with Exploration: An Entropy Perspective"): GRPO's
// advantage plus a clipped, detached entropy term on every token,
//   Â_t = Â_i + ψ(H_t),   ψ(H_t) = min(α · H_t, |Â_i| / κ),
// with H_t the sampler's entropy at token t (data, never a gradient). With κ > 1, ψ < |Â_i|: the sign of a
// token's advantage never flips; a confident token (small H) of a wrong response is pushed down harder than
// an uncertain one, and a group with no signal (Â = 0) stays at 0. The paper's values are α 0.4, κ 2 (also in
// EGPO, arXiv 2508.05118); no reference framework ships it. The loss is GRPO's clip 0.2 with verl's token
// mean.
#include <algorithm>
#include <cmath>

#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"

namespace gtpo::rl::algorithms {
namespace {

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  grpo_compute(in, out);
  const EntropyAdvConfig& e = in.cfg.entropy_adv;
  for (const std::vector<int>& group : in.groups)
    for (int i : group) {
      ResponseResult& r = out.responses[i];
      const double a = r.seq_advantage;
      for (std::size_t t = 0; t < r.advantages.size(); ++t)
        r.advantages[t] =
            static_cast<float>(a + std::min(e.alpha * in.batch[i].entropies[t], std::abs(a) / e.kappa));
    }
}

std::vector<RlKey> keys() {
  using config::field;
  using config::number;
  return {
      field("entropy_adv", "alpha", &RlConfig::entropy_adv, &EntropyAdvConfig::alpha, number(0),
            "entropy_adv: α, the weight of the token entropy in ψ = min(α·H, |A|/κ)"),
      field("entropy_adv", "kappa", &RlConfig::entropy_adv, &EntropyAdvConfig::kappa, number(1, 1e300, true),
            "entropy_adv: κ > 1, ψ is at most |A|/κ so the advantage keeps its sign"),
  };
}

}  // namespace

Algorithm entropy_adv() {
  return {.name = "entropy_adv",
          .summary = "entropy advantage: GRPO's A plus min(alpha*H, |A|/kappa) per token, token-mean",
          .set_defaults = verl_defaults,
          .compute = compute,
          .needs_entropies = true,
          .keys = keys};
}

}  // namespace gtpo::rl::algorithms
