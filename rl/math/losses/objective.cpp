#include <algorithm>
#include <cmath>

#include "rl/math/losses/loss.h"
#include "runtime/error.h"

namespace gtpo::rl {
namespace {

constexpr double kLogRatioClamp = 20.0;  // spec: log-ratio clamped to [-20, 20]

double kl_value(double x, KlEstimator e) {
  switch (e) {
    case KlEstimator::K1: return x;
    case KlEstimator::K2: return 0.5 * x * x;
    case KlEstimator::K3: return std::exp(-x) - 1.0 + x;
  }
  return 0.0;
}
double kl_grad(double x, KlEstimator e) {
  switch (e) {
    case KlEstimator::K1: return 1.0;
    case KlEstimator::K2: return x;
    case KlEstimator::K3: return 1.0 - std::exp(-x);
  }
  return 0.0;
}

void validate(size_t n, size_t entropies, const PolicyLossInputs& in, const RlConfig& c) {
  GTPO_CHECK(in.old_logprobs.size() == n && in.token_weights.size() == n, "policy_loss: ", n, " tokens but ",
             in.old_logprobs.size(), " old log-probs and ", in.token_weights.size(), " weights");
  if (!in.sequence_level)
    GTPO_CHECK(in.advantages.size() == n, "policy_loss: ", n, " tokens but ", in.advantages.size(),
               " advantages");
  if (c.kl_coef != 0.0)
    GTPO_CHECK(in.ref_logprobs.size() == n, "policy_loss: kl_coef is set but ", in.ref_logprobs.size(),
               " reference log-probs were given for ", n, " tokens");
  if (c.entropy_coef != 0.0)
    GTPO_CHECK(entropies == n, "policy_loss: entropy_coef is set but no matching entropies were given");
  if (!in.cov_selected.empty())
    GTPO_CHECK(in.cov_selected.size() == n, "policy_loss: ", n, " tokens but ", in.cov_selected.size(),
               " covariance selections");
  if (!in.is_weights.empty())
    GTPO_CHECK(in.is_weights.size() == n, "policy_loss: ", n, " tokens but ", in.is_weights.size(),
               " IS weights");
  if (!in.sequence_level) return;
  GTPO_CHECK(c.policy_loss == "clip", "policy_loss: rl.policy_loss ", c.policy_loss, " is a per-token loss; ",
             c.algo, "'s loss is over sequences and needs rl.policy_loss clip");
  const size_t s = in.seq_advantages.size();
  GTPO_CHECK(in.seq_begin.size() == s && in.seq_end.size() == s && in.seq_weights.size() == s &&
                 (in.seq_is_weights.empty() || in.seq_is_weights.size() == s),
             "policy_loss: sequence ranges, advantages and weights disagree");
  for (size_t i = 0; i < s; ++i)
    GTPO_CHECK(
        in.seq_begin[i] >= 0 && in.seq_begin[i] <= in.seq_end[i] && static_cast<size_t>(in.seq_end[i]) <= n,
        "policy_loss: sequence ", i, " range [", in.seq_begin[i], ", ", in.seq_end[i], ") is outside the ", n,
        " tokens");
}

std::vector<TokenRatio> importance_ratios(const std::vector<float>& lp,
                                          const std::vector<float>& old_logprobs) {
  std::vector<TokenRatio> r(lp.size());
  for (size_t t = 0; t < lp.size(); ++t) {
    const double raw = static_cast<double>(lp[t]) - old_logprobs[t];
    r[t].log_ratio = std::clamp(raw, -kLogRatioClamp, kLogRatioClamp);
    r[t].ratio = std::exp(r[t].log_ratio);
    r[t].inside_clamp = raw > -kLogRatioClamp && raw < kLogRatioClamp;
  }
  return r;
}

// Each token's own ratio and advantage under LOSS's term, weighted by its aggregation weight.
void token_terms(const PolicyLoss& loss, const std::vector<TokenRatio>& r, const std::vector<float>& lp,
                 const PolicyLossInputs& in, const RlConfig& c, LossSums& sums, PolicyLossTerms& out) {
  for (size_t t = 0; t < lp.size(); ++t) {
    const double w = in.token_weights[t];
    if (w == 0.0) continue;
    const bool selected = !in.cov_selected.empty() && in.cov_selected[t];
    const double is = in.is_weights.empty() ? 1.0 : in.is_weights[t];
    const LossTerm term = loss.token_term(r[t], lp[t], in.advantages[t], selected, c);
    sums.add(w, is, term.loss, term.status);
    out.dloss_dlogprob[t] += static_cast<float>(w * is * term.dloss);
    out.status[t] = term.status;
  }
}

// KL to the frozen reference, with the token aggregation weights; adds its gradient to dlp.
double reference_kl(const std::vector<float>& lp, const PolicyLossInputs& in, const RlConfig& c,
                    std::vector<float>& dlp) {
  double kl = 0.0;
  for (size_t t = 0; t < lp.size(); ++t) {
    const double w = in.token_weights[t];
    if (w == 0.0) continue;
    const double x = static_cast<double>(lp[t]) - in.ref_logprobs[t];
    kl += w * kl_value(x, c.kl_estimator);
    dlp[t] += static_cast<float>(c.kl_coef * w * kl_grad(x, c.kl_estimator));
  }
  return kl;
}

// Metrics over the tokens that enter the loss.
PolicyLossMetrics loss_metrics(const std::vector<TokenRatio>& r, const std::vector<float>& ent,
                               const PolicyLossInputs& in, const LossSums& sums) {
  PolicyLossMetrics m;
  double approx_kl = 0.0, ent_sum = 0.0, ratio_sum = 0.0;
  for (size_t t = 0; t < r.size(); ++t) {
    if (in.token_weights[t] == 0.0f) continue;
    ++m.tokens;
    approx_kl +=
        std::exp(-r[t].log_ratio) - 1.0 + r[t].log_ratio;  // k3 of KL(π_old || π_θ) from π_old samples
    ratio_sum += r[t].ratio;
    m.ratio_max = std::max(m.ratio_max, r[t].ratio);
    if (!ent.empty()) ent_sum += ent[t];
  }
  const double count = static_cast<double>(std::max<int64_t>(m.tokens, 1));
  const double total = sums.weight_total;
  m.clip_frac_low = total > 0 ? sums.weight_low / total : 0.0;
  m.clip_frac_high = total > 0 ? sums.weight_high / total : 0.0;
  m.dual_clip_frac = total > 0 ? sums.weight_dual / total : 0.0;
  m.cov_frac = total > 0 ? sums.weight_selected / total : 0.0;
  m.approx_kl = approx_kl / count;
  m.entropy_mean = ent_sum / count;
  m.ratio_mean = ratio_sum / count;
  return m;
}

}  // namespace

PolicyLossTerms policy_loss_terms(const std::vector<float>& lp, const std::vector<float>& ent,
                                  const PolicyLossInputs& in, const RlConfig& c) {
  const size_t n = lp.size();
  validate(n, ent.size(), in, c);
  const std::vector<TokenRatio> ratios = importance_ratios(lp, in.old_logprobs);
  PolicyLossTerms out;
  out.dloss_dlogprob.assign(n, 0.0f);
  out.status.assign(n, ClipStatus::None);
  LossSums sums;
  if (in.sequence_level)
    sequence_terms(ratios, in, c, sums, out.dloss_dlogprob, out.status);
  else
    token_terms(find_policy_loss(c.policy_loss), ratios, lp, in, c, sums, out);
  const double kl = c.kl_coef != 0.0 ? reference_kl(lp, in, c, out.dloss_dlogprob) : 0.0;
  double bonus = 0.0;  // the entropy bonus, with the token aggregation weights
  if (c.entropy_coef != 0.0) {
    out.dloss_dentropy.assign(n, 0.0f);
    for (size_t t = 0; t < n; ++t) {
      const double w = in.token_weights[t];
      bonus += w * ent[t];
      out.dloss_dentropy[t] = static_cast<float>(-c.entropy_coef * w);
    }
  }
  out.loss = sums.policy + c.kl_coef * kl - c.entropy_coef * bonus;
  out.metrics = loss_metrics(ratios, ent, in, sums);
  out.metrics.loss = out.loss;
  out.metrics.policy_loss = sums.policy;
  out.metrics.kl_loss = kl;
  out.metrics.entropy_bonus = bonus;
  return out;
}

}  // namespace gtpo::rl
