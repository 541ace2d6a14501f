// GTPO (paper §2, Eqs. 3, 5, 6, 7): entropy-shaped token rewards, column-wise over response positions.
#include <algorithm>

#include "rl/math/algorithms/all.h"
#include "rl/math/entropy_weights.h"
#include "rl/math/zscore.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  c.clip_low = 0.2;
  c.clip_high = 0.28;
  c.loss_agg = LossAgg::TokenMean;  // Eq. 7: 1/Σ_k |o_k|
  c.dynamic_sampling = true;
  c.overlong = Overlong::Grop;  // Appendix D, as in the paper's runs
}

// Shapes the tokens of one outcome set of a scope, position by position:
//   O+: r̃_{i,t} =  α1 + α2 · d_t · H_{i,t} / Σ_{k∈O+_t} H_{k,t}                       (Eq. 3)
//   O−: r̃_{j,t} = −α1 − α2 · h_t · (1/(H_{j,t}+ε)) / Σ_{k∈O−_t} 1/(H_{k,t}+ε)      (Eq. 5)
// (or the geometric forms of Appendix C), plus the response's overlong penalty.
// The set is sorted by length, longest first, so the responses active at t are a prefix: O(tokens).
void shape_set(const AlgorithmInput& in, std::vector<int> set, bool positive,
               std::vector<std::vector<double>>& shaped) {
  const auto len = [&](int i) { return response_length(in.batch[i]); };
  std::stable_sort(set.begin(), set.end(), [&](int a, int b) { return len(a) > len(b); });
  const GtpoConfig& g = in.cfg.gtpo;
  const double sign = positive ? 1.0 : -1.0;
  std::vector<double> h(set.size()), weight(set.size());
  std::size_t active = set.size();
  for (int t = 0;; ++t) {
    while (active > 0 && len(set[active - 1]) <= t) --active;
    if (active == 0) break;
    for (std::size_t k = 0; k < active; ++k) h[k] = entropy_at(in.batch[set[k]], t);
    entropy_weights(h.data(), active, positive, g.weights, in.cfg.eps, weight.data());
    for (std::size_t k = 0; k < active; ++k)
      shaped[set[k]][t] = (g.outcome == Outcome::Reward
                               ? g.alpha1 * shaping_reward(in.batch[set[k]]) + sign * g.alpha2 * weight[k]
                               : sign * (g.alpha1 + g.alpha2 * weight[k])) +
                          in.penalty[set[k]];
  }
}

// Eq. 6: z-scores the shaped rewards of the given responses as one token population.
void normalise(const AlgorithmInput& in, const std::vector<int>& set,
               const std::vector<std::vector<double>>& shaped, AdvantageResult& out) {
  std::vector<double> tokens;
  for (int i : set) tokens.insert(tokens.end(), shaped[i].begin(), shaped[i].end());
  zscore_in_place(tokens, in.cfg.eps);
  std::size_t pos = 0;
  for (int i : set)
    for (float& a : out.responses[i].advantages) a = static_cast<float>(tokens[pos++]);
}

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  // gtpo.scope: each prompt group on its own, or every kept group pooled.
  std::vector<std::vector<int>> scopes = in.groups;
  if (in.cfg.gtpo.scope == Scope::Batch) {
    scopes.assign(1, {});
    for (const auto& g : in.groups) scopes[0].insert(scopes[0].end(), g.begin(), g.end());
  }
  std::vector<std::vector<double>> shaped(in.batch.size());
  for (const auto& scope : scopes) {
    std::vector<int> pos, neg;  // O+ and O− by correctness, never by the penalised reward
    for (int i : scope) {
      shaped[i].assign(static_cast<std::size_t>(response_length(in.batch[i])), 0.0);
      (is_correct(in.batch[i]) ? pos : neg).push_back(i);
    }
    shape_set(in, pos, true, shaped);
    shape_set(in, neg, false, shaped);
    if (in.cfg.gtpo.adv_norm == AdvNorm::Joint) {
      normalise(in, scope, shaped, out);  // Ã over R̃ = R̃+ ∪ R̃−: keeps the outcome sign
    } else {
      normalise(in, pos, shaped, out);  // Eq. 6 read literally: R̃+ and R̃− each on their own
      normalise(in, neg, shaped, out);
    }
    for (int i : scope) out.responses[i].shaped.assign(shaped[i].begin(), shaped[i].end());
  }
}

const config::Codec<Outcome> kOutcomes =
    config::choice<Outcome>({{"correctness", Outcome::Correctness}, {"reward", Outcome::Reward}});
const config::Codec<MeanKind> kMeanKinds =
    config::choice<MeanKind>({{"arith", MeanKind::Arith}, {"geo", MeanKind::Geo}});

std::vector<RlKey> keys() {
  using config::field;
  const auto weight = config::number(0, std::numeric_limits<double>::infinity());
  return {
      field("gtpo", "alpha1", &RlConfig::gtpo, &GtpoConfig::alpha1, weight,
            "gtpo: α1, the outcome part of the shaped token reward"),
      field("gtpo", "alpha2", &RlConfig::gtpo, &GtpoConfig::alpha2, weight,
            "gtpo: α2, the entropy-weighted part of the shaped token reward"),
      field("gtpo", "adv_norm", &RlConfig::gtpo, &GtpoConfig::adv_norm,
            config::choice<AdvNorm>({{"joint", AdvNorm::Joint}, {"separate", AdvNorm::Separate}}),
            "gtpo: z-score all shaped rewards together (joint) or O+ and O− apart (separate)"),
      field("gtpo", "scope", &RlConfig::gtpo, &GtpoConfig::scope,
            config::choice<Scope>({{"group", Scope::Group}, {"batch", Scope::Batch}}),
            "gtpo: shaping and advantage statistics per prompt group or over the batch"),
      field("gtpo", "weights", &RlConfig::gtpo, &GtpoConfig::weights, kMeanKinds,
            "gtpo: entropy weights relative to the arithmetic or geometric mean"),
      field("gtpo", "outcome", &RlConfig::gtpo, &GtpoConfig::outcome, kOutcomes,
            "gtpo: r_i of the outcome part α1·r_i: ±1 by correctness (the paper), or reward: the reward "
            "functions' "
            "r_i as given (O+/O− and the entropy part stay by correctness; docs/algorithms.md)"),
  };
}

}  // namespace

Algorithm gtpo() {
  return {
      .name = "gtpo",
      .summary = "GTPO: entropy-shaped token rewards (Eqs. 3, 5), token z-score (Eq. 6), token-mean (Eq. 7)",
      .set_defaults = defaults,
      .compute = compute,
      .needs_entropies = true,
      .token_level_shaping = true,
      .outcome_from_correctness = [](const RlConfig& c) { return c.gtpo.outcome == Outcome::Correctness; },
      .keys = keys};
}

}  // namespace gtpo::rl::algorithms
