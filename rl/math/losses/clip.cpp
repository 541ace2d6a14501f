// PPO's clipped surrogate (Schulman et al. 2017; the spec's Eq. 7 for GTPO's token rewards):
//   J = Σ_t v_t min(w_t Ã_t, clip(w_t, 1 − ε_low, 1 + ε_high) Ã_t),  w_t = π_θ(o_t)/π_old(o_t),
// with the dual clip of Ye et al. 2020 (rl.dual_clip c): for Ã < 0 the objective is bounded below by c·Ã.
// A clipped token has no gradient.
#include <algorithm>

#include "rl/math/losses/loss.h"

namespace gtpo::rl {

LossTerm clipped_surrogate(double w, double a, const RlConfig& c) {
  const double clipped_w = std::clamp(w, 1.0 - c.clip_low, 1.0 + c.clip_high);
  const double unclipped = w * a, clipped = clipped_w * a;
  LossTerm s;
  if (unclipped <= clipped)
    s = {-unclipped, -a, ClipStatus::None};
  else
    s = {-clipped, 0.0, w < 1.0 ? ClipStatus::Low : ClipStatus::High};
  if (c.dual_clip > 0.0 && a < 0.0 && -s.loss < c.dual_clip * a)
    s = {-c.dual_clip * a, 0.0, ClipStatus::Dual};
  return s;
}

namespace losses {
namespace {

LossTerm term(const TokenRatio& w, double, double a, bool, const RlConfig& c) {
  const LossTerm s = clipped_surrogate(w.ratio, a, c);
  return {s.loss, s.dloss * w.dratio(), s.status};
}

}  // namespace

PolicyLoss clip() {
  return {.name = "clip", .summary = "PPO's clipped surrogate", .token_term = term, .reads_dual_clip = true};
}

}  // namespace losses
}  // namespace gtpo::rl
