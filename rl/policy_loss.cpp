#include "rl/policy_loss.h"

#include <algorithm>
#include <cmath>

#include "runtime/autograd.h"
#include "runtime/error.h"

namespace gtpo::rl {

namespace {

constexpr double kLogRatioClamp = 20.0;  // spec: log-ratio clamped to [-20, 20]

// The clipped surrogate for one ratio w and advantage a: returns the loss term -min(wA, clip(w)A) (with
// the optional dual clip for A < 0), its derivative d/dw, and the clip status.
struct Surrogate {
  double loss;
  double dloss_dw;
  uint8_t status;
};

Surrogate clipped_surrogate(double w, double a, const RlConfig& c) {
  const double clipped_w = std::clamp(w, 1.0 - c.clip_low, 1.0 + c.clip_high);
  const double unclipped = w * a, clipped = clipped_w * a;
  Surrogate s{};
  if (unclipped <= clipped) {
    s = {-unclipped, -a, 0};
  } else {
    s = {-clipped, 0.0, static_cast<uint8_t>(w < 1.0 ? 1 : 2)};
  }
  // Dual clip (Ye et al. 2020): for A < 0 the objective is bounded below by c·A.
  if (c.dual_clip > 0.0 && a < 0.0 && -s.loss < c.dual_clip * a) s = {-c.dual_clip * a, 0.0, 3};
  return s;
}

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

struct PolicyLossBackward final : Node {
  std::vector<float> dloss_dlogprob;  // precomputed in forward: the loss is linear in its upstream grad
  std::vector<float> dloss_dentropy;
  Shape shape;
  const char* name() const override { return "PolicyLossBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const float g = grads[0].item();
    Tensor glp, gent;
    if (needs_input_grad(0)) {
      std::vector<float> v(dloss_dlogprob);
      for (float& x : v) x *= g;
      glp = Tensor::from_vector(v, shape, grads[0].device());
    }
    if (needs_input_grad(1) && !dloss_dentropy.empty()) {
      std::vector<float> v(dloss_dentropy);
      for (float& x : v) x *= g;
      gent = Tensor::from_vector(v, shape, grads[0].device());
    }
    return {glp, gent};
  }
};

void validate(const Tensor& logprobs, const Tensor& entropies, const PolicyLossInputs& in, const RlConfig& c) {
  GTPO_CHECK(logprobs.defined() && logprobs.rank() == 1, "policy_loss: logprobs must be [N], got ",
             logprobs.describe());
  const size_t n = static_cast<size_t>(logprobs.numel());
  GTPO_CHECK(in.old_logprobs.size() == n && in.token_weights.size() == n, "policy_loss: ", n,
             " tokens but ", in.old_logprobs.size(), " old log-probs and ", in.token_weights.size(), " weights");
  if (!in.sequence_level)
    GTPO_CHECK(in.advantages.size() == n, "policy_loss: ", n, " tokens but ", in.advantages.size(), " advantages");
  if (c.kl_coef != 0.0)
    GTPO_CHECK(in.ref_logprobs.size() == n, "policy_loss: kl_coef is set but ", in.ref_logprobs.size(),
               " reference log-probs were given for ", n, " tokens");
  if (c.entropy_coef != 0.0)
    GTPO_CHECK(entropies.defined() && entropies.numel() == logprobs.numel(),
               "policy_loss: entropy_coef is set but no matching entropies were given");
  if (!in.cov_selected.empty())
    GTPO_CHECK(in.cov_selected.size() == n, "policy_loss: ", n, " tokens but ", in.cov_selected.size(),
               " covariance selections");
  if (!in.is_weights.empty())
    GTPO_CHECK(in.is_weights.size() == n, "policy_loss: ", n, " tokens but ", in.is_weights.size(),
               " IS weights");
  if (in.sequence_level) {
    GTPO_CHECK(c.policy_loss == PolicyLossKind::Clip, "policy_loss: rl.policy_loss ",
               to_string(c.policy_loss), " is a per-token loss; ", c.algo,
               "'s loss is over sequences and needs rl.policy_loss clip");
    const size_t s = in.seq_advantages.size();
    GTPO_CHECK(in.seq_begin.size() == s && in.seq_end.size() == s && in.seq_weights.size() == s &&
                   (in.seq_is_weights.empty() || in.seq_is_weights.size() == s),
               "policy_loss: sequence ranges, advantages and weights disagree");
    for (size_t i = 0; i < s; ++i)
      GTPO_CHECK(in.seq_begin[i] >= 0 && in.seq_begin[i] <= in.seq_end[i] && static_cast<size_t>(in.seq_end[i]) <= n,
                 "policy_loss: sequence ", i, " range [", in.seq_begin[i], ", ", in.seq_end[i], ") is outside the ", n,
                 " tokens");
  }
}

// Importance ratios π_θ/π_old per token, from log-probs clamped to ±kLogRatioClamp.
struct Ratios {
  std::vector<double> log_ratio, ratio;
  std::vector<bool> inside_clamp;
  // d(ratio)/d(logprob): the ratio inside the clamp, 0 where the clamp holds it.
  double dratio(size_t t) const { return inside_clamp[t] ? ratio[t] : 0.0; }
};

Ratios importance_ratios(const std::vector<float>& lp, const std::vector<float>& old_logprobs) {
  Ratios r;
  const size_t n = lp.size();
  r.log_ratio.resize(n);
  r.ratio.resize(n);
  r.inside_clamp.resize(n);
  for (size_t t = 0; t < n; ++t) {
    const double raw = static_cast<double>(lp[t]) - old_logprobs[t];
    r.log_ratio[t] = std::clamp(raw, -kLogRatioClamp, kLogRatioClamp);
    r.ratio[t] = std::exp(r.log_ratio[t]);
    r.inside_clamp[t] = raw > -kLogRatioClamp && raw < kLogRatioClamp;
  }
  return r;
}

// The surrogate's running sums: the weighted loss and the weight in each clip status.
struct SurrogateSums {
  double policy = 0.0, weight_low = 0.0, weight_high = 0.0, weight_dual = 0.0, weight_cov = 0.0,
         weight_total = 0.0;
  // WEIGHT is the aggregation weight; IS (rl.rollout_correction) scales the loss only.
  void add(double weight, double is, double loss, uint8_t status) {
    policy += weight * is * loss;
    weight_total += weight;
    if (status == 1) weight_low += weight;
    if (status == 2) weight_high += weight;
    if (status == 3) weight_dual += weight;
    if (status == 4) weight_cov += weight;
  }
};

// One token's loss term under rl.policy_loss, its derivative by log π_θ,t and its clip status.
struct TokenTerm {
  double loss;
  double dloss_dlogprob;
  uint8_t status;
};

TokenTerm token_term(const Ratios& r, size_t t, double lp, double a, bool selected, const RlConfig& c) {
  const double w = r.ratio[t];
  switch (c.policy_loss) {
    case PolicyLossKind::Cispo: {  // −sg[clip(w)]·Â·log π_θ: a gradient through every token
      const double clipped = std::clamp(w, 1.0 - c.clip_low, 1.0 + c.clip_high);
      const uint8_t status = w < 1.0 - c.clip_low ? 1 : w > 1.0 + c.clip_high ? 2 : 0;
      return {-clipped * a * lp, -clipped * a, status};
    }
    case PolicyLossKind::KlCov: {  // no clip; a selected token also pays coef·|log π_θ − log π_old|
      TokenTerm term{-w * a, -a * r.dratio(t), 0};
      if (selected) {
        const double x = r.log_ratio[t], sign = x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0;
        term = {term.loss + c.kl_cov.coef * std::abs(x),
                term.dloss_dlogprob + (r.inside_clamp[t] ? c.kl_cov.coef * sign : 0.0), 4};
      }
      return term;
    }
    case PolicyLossKind::ClipCov:  // a selected token is detached: no loss, no gradient
      if (selected) return {0.0, 0.0, 4};
      break;
    case PolicyLossKind::Clip:
      break;
  }
  const Surrogate s = clipped_surrogate(w, a, c);
  return {s.loss, s.dloss_dw * r.dratio(t), s.status};
}

// Token level: each token's own ratio and advantage, weighted by its aggregation weight.
void token_surrogate(const Ratios& r, const std::vector<float>& lp, const PolicyLossInputs& in,
                     const RlConfig& c, SurrogateSums& sums, std::vector<float>& dlp, ClipStatus& status) {
  for (size_t t = 0; t < dlp.size(); ++t) {
    const double w = in.token_weights[t];
    if (w == 0.0) continue;
    const bool selected = !in.cov_selected.empty() && in.cov_selected[t];
    const double is = in.is_weights.empty() ? 1.0 : in.is_weights[t];
    const TokenTerm term = token_term(r, t, lp[t], in.advantages[t], selected, c);
    sums.add(w, is, term.loss, term.status);
    dlp[t] += static_cast<float>(w * is * term.dloss_dlogprob);
    status[t] = term.status;
  }
}

// GRPO-S Eq. 11 and GSPO: one ratio per response, ŵ_i = mean_t w_{i,t} (arith) or exp(mean_t log w_{i,t})
// (geo), with the response's advantage and weight.
void sequence_surrogate(const Ratios& r, const PolicyLossInputs& in, const RlConfig& c, SurrogateSums& sums,
                        std::vector<float>& dlp, ClipStatus& status) {
  const bool arith = in.seq_ratio == MeanKind::Arith;
  for (size_t s = 0; s < in.seq_advantages.size(); ++s) {
    const double v = in.seq_weights[s];
    const int64_t b = in.seq_begin[s], e = in.seq_end[s];
    if (v == 0.0 || e == b) continue;
    const double len = static_cast<double>(e - b);
    double seq_ratio = 0.0;
    if (arith) {
      for (int64_t t = b; t < e; ++t) seq_ratio += r.ratio[static_cast<size_t>(t)];
      seq_ratio /= len;
    } else {
      for (int64_t t = b; t < e; ++t) seq_ratio += r.log_ratio[static_cast<size_t>(t)];
      seq_ratio = std::exp(seq_ratio / len);
    }
    const Surrogate sur = clipped_surrogate(seq_ratio, in.seq_advantages[s], c);
    const double is = in.seq_is_weights.empty() ? 1.0 : in.seq_is_weights[s];
    sums.add(v, is, sur.loss, sur.status);
    for (int64_t t = b; t < e; ++t) {
      const size_t i = static_cast<size_t>(t);
      const double dseq = arith ? r.dratio(i) / len : (r.dratio(i) > 0.0 ? seq_ratio / len : 0.0);
      dlp[i] += static_cast<float>(v * is * sur.dloss_dw * dseq);
      status[i] = sur.status;
    }
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
PolicyLossMetrics loss_metrics(const Ratios& r, const std::vector<float>& ent, const PolicyLossInputs& in,
                               const SurrogateSums& sums) {
  PolicyLossMetrics m;
  double approx_kl = 0.0, ent_sum = 0.0, ratio_sum = 0.0;
  for (size_t t = 0; t < r.ratio.size(); ++t) {
    if (in.token_weights[t] == 0.0f) continue;
    ++m.tokens;
    approx_kl +=
        std::exp(-r.log_ratio[t]) - 1.0 + r.log_ratio[t];  // k3 of KL(π_old || π_θ) from π_old samples
    ratio_sum += r.ratio[t];
    m.ratio_max = std::max(m.ratio_max, r.ratio[t]);
    if (!ent.empty()) ent_sum += ent[t];
  }
  const double count = static_cast<double>(std::max<int64_t>(m.tokens, 1));
  const double total = sums.weight_total;
  m.clip_frac_low = total > 0 ? sums.weight_low / total : 0.0;
  m.clip_frac_high = total > 0 ? sums.weight_high / total : 0.0;
  m.dual_clip_frac = total > 0 ? sums.weight_dual / total : 0.0;
  m.cov_frac = total > 0 ? sums.weight_cov / total : 0.0;
  m.approx_kl = approx_kl / count;
  m.entropy_mean = ent_sum / count;
  m.ratio_mean = ratio_sum / count;
  return m;
}

}  // namespace

Tensor policy_loss(const Tensor& logprobs, const Tensor& entropies, const PolicyLossInputs& in, const RlConfig& c,
                   PolicyLossMetrics* metrics, ClipStatus* clip) {
  validate(logprobs, entropies, in, c);
  const size_t n = static_cast<size_t>(logprobs.numel());
  const std::vector<float> lp = logprobs.to_vector();
  std::vector<float> ent;
  if (entropies.defined()) ent = entropies.to_vector();
  const Ratios ratios = importance_ratios(lp, in.old_logprobs);

  std::vector<float> dlp(n, 0.0f), dent;
  ClipStatus status(n, 0);
  SurrogateSums sums;
  if (in.sequence_level)
    sequence_surrogate(ratios, in, c, sums, dlp, status);
  else
    token_surrogate(ratios, lp, in, c, sums, dlp, status);
  const double kl = c.kl_coef != 0.0 ? reference_kl(lp, in, c, dlp) : 0.0;
  double bonus = 0.0;  // the entropy bonus, with the token aggregation weights
  if (c.entropy_coef != 0.0) {
    dent.assign(n, 0.0f);
    for (size_t t = 0; t < n; ++t) {
      const double w = in.token_weights[t];
      bonus += w * ent[t];
      dent[t] = static_cast<float>(-c.entropy_coef * w);
    }
  }
  const double total = sums.policy + c.kl_coef * kl - c.entropy_coef * bonus;

  PolicyLossMetrics m = loss_metrics(ratios, ent, in, sums);
  m.loss = total;
  m.policy_loss = sums.policy;
  m.kl_loss = kl;
  m.entropy_bonus = bonus;
  if (metrics) *metrics = m;
  if (clip) *clip = std::move(status);

  Tensor out = Tensor::scalar(static_cast<float>(total), logprobs.device());
  if (should_record({&logprobs, &entropies})) {
    auto node = std::make_shared<PolicyLossBackward>();
    node->dloss_dlogprob = std::move(dlp);
    node->dloss_dentropy = std::move(dent);
    node->shape = logprobs.shape();
    attach_node(node, {&logprobs, &entropies}, {&out});
  }
  return out;
}

}  // namespace gtpo::rl
