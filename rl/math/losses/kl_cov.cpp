// KL-Cov (Cui et al. 2025): no clip; the max(1, ⌊ratio · N⌋) loss tokens with the largest
// Cov(log π_old, Â) also pay coef · |log π_θ − log π_old|,
//   J = Σ_t v_t (w_t Ã_t − [t selected] · coef · |log w_t|).
#include <cmath>

#include "rl/math/covariance_selection.h"
#include "rl/math/losses/loss.h"

namespace gtpo::rl::losses {
namespace {

LossTerm term(const TokenRatio& w, double, double a, bool selected, const RlConfig& c) {
  LossTerm t{-w.ratio * a, -a * w.dratio(), ClipStatus::None};
  if (!selected) return t;
  const double x = w.log_ratio, sign = x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0;
  return {t.loss + c.kl_cov.coef * std::abs(x), t.dloss + (w.inside_clamp ? c.kl_cov.coef * sign : 0.0),
          ClipStatus::Selected};
}

std::vector<uint8_t> select(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                            const RlConfig& c, uint64_t) {
  return kl_cov_selection(cov, in_loss, c.kl_cov.ratio);
}

std::vector<RlKey> keys() {
  using config::field;
  using config::number;
  return {
      field("kl_cov", "ratio", &RlConfig::kl_cov, &KlCovConfig::ratio, number(0, 1, true),
            "kl_cov: share of the loss tokens (largest covariance, at least one) penalised, with "
            "rl.policy_loss kl_cov"),
      field("kl_cov", "coef", &RlConfig::kl_cov, &KlCovConfig::coef, number(0),
            "kl_cov: weight of the |log π_θ − log π_old| penalty"),
  };
}

}  // namespace

PolicyLoss kl_cov() {
  return {.name = "kl_cov",
          .summary = "no clip; the largest-covariance tokens get a |log ratio| penalty, kl_cov.*",
          .token_term = term,
          .select = select,
          .reads_clip_range = false,
          .keys = keys};
}

}  // namespace gtpo::rl::losses
