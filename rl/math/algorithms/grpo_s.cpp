// GRPO-S (paper §2, Eqs. 8-11): entropy-shaped sequence rewards, normalised within the group.
#include <cmath>

#include "rl/math/algorithms/all.h"
#include "rl/math/entropy_weights.h"
#include "rl/math/sequence_advantage.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  c.clip_low = 0.2;
  c.clip_high = 0.28;
  // The policy loss is over sequences (Eq. 10, −(1/G) Σ_i); loss_agg only aggregates token terms (KL).
  c.loss_agg = LossAgg::SeqMeanTokenMean;
  c.dynamic_sampling = true;
  c.overlong = Overlong::Grop;
}

// Eq. 8: Ĥ_i = (1/|o_i|) Σ_t H_{i,t}; with grpo_s.weights=geo the geometric mean (Appendix C).
// An empty response has Ĥ = 0 (arith) or 1 (geo: the empty product).
double mean_entropy(const Response& r, MeanKind kind, double eps) {
  const int n = response_length(r);
  if (n == 0) return kind == MeanKind::Geo ? 1.0 : 0.0;
  double sum = 0.0;
  for (int t = 0; t < n; ++t)
    sum += kind == MeanKind::Geo ? std::log(entropy_at(r, t) + eps) : entropy_at(r, t);
  return kind == MeanKind::Geo ? std::exp(sum / n) : sum / n;
}

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  const GrpoSConfig& s = in.cfg.grpo_s;
  std::vector<double> reward(in.batch.size(), 0.0);
  for (const auto& group : in.groups) {
    for (bool positive : {true, false}) {
      std::vector<int> set;
      std::vector<double> h_hat, weight;
      for (int i : group)
        if (is_correct(in.batch[i]) == positive) {
          set.push_back(i);
          h_hat.push_back(mean_entropy(in.batch[i], s.weights, in.cfg.eps));
        }
      weight.resize(set.size());
      entropy_weights(h_hat.data(), set.size(), positive, s.weights, in.cfg.eps, weight.data());
      // Eq. 9: r̂+ = β1 + β2 · n · Ĥ_i/Σ Ĥ,  r̂− = −β1 − β2 · m · (1/Ĥ_j)/Σ 1/Ĥ  (+ overlong penalty)
      const double sign = positive ? 1.0 : -1.0;
      for (std::size_t k = 0; k < set.size(); ++k)
        reward[set[k]] = (s.outcome == Outcome::Reward
                              ? s.beta1 * shaping_reward(in.batch[set[k]]) + sign * s.beta2 * weight[k]
                              : sign * (s.beta1 + s.beta2 * weight[k])) +
                         in.penalty[set[k]];
    }
  }
  // Â_i = (r̂_i − mean_G r̂)/(std_G r̂ + ε), always per group. The ratio ŵ_i (Eq. 11, grpo_s.ratio) and the
  // loss −(1/G) Σ_i min(ŵ Â, clip(ŵ) Â) (Eq. 10) belong to the policy loss.
  set_group_sequence_advantages(in, reward, /*divide_by_std=*/true, out);
}

std::vector<RlKey> keys() {
  using config::field;
  const auto weight = config::number(0, std::numeric_limits<double>::infinity());
  const auto means = config::choice<MeanKind>({{"arith", MeanKind::Arith}, {"geo", MeanKind::Geo}});
  return {
      field("grpo_s", "beta1", &RlConfig::grpo_s, &GrpoSConfig::beta1, weight,
            "grpo_s: β1, the outcome part of the shaped sequence reward"),
      field("grpo_s", "beta2", &RlConfig::grpo_s, &GrpoSConfig::beta2, weight,
            "grpo_s: β2, the entropy-weighted part of the shaped sequence reward"),
      field("grpo_s", "weights", &RlConfig::grpo_s, &GrpoSConfig::weights, means,
            "grpo_s: entropy weights relative to the arithmetic or geometric mean"),
      field("grpo_s", "ratio", &RlConfig::grpo_s, &GrpoSConfig::ratio, means,
            "grpo_s: sequence importance ratio as the arithmetic or geometric mean"),
      field("grpo_s", "outcome", &RlConfig::grpo_s, &GrpoSConfig::outcome,
            config::choice<Outcome>({{"correctness", Outcome::Correctness}, {"reward", Outcome::Reward}}),
            "grpo_s: r_i of the outcome part β1·r_i: ±1 by correctness (the paper), or reward: the reward "
            "functions' r_i as given (O+/O− and the entropy part stay by correctness; docs/algorithms.md)"),
  };
}

}  // namespace

Algorithm grpo_s() {
  return {
      .name = "grpo_s",
      .summary = "GRPO-S: entropy-shaped sequence rewards (Eqs. 8-9), group z-score, sequence loss (Eq. 10)",
      .set_defaults = defaults,
      .compute = compute,
      .needs_entropies = true,
      .sequence_ratio = [](const RlConfig& c) { return c.grpo_s.ratio; } /* Eq. 11 */,
      .outcome_from_correctness = [](const RlConfig& c) { return c.grpo_s.outcome == Outcome::Correctness; },
      .keys = keys};
}

}  // namespace gtpo::rl::algorithms
