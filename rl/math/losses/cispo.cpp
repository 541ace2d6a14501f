// CISPO (MiniMax-M1, Chen et al. 2025): the importance weight clipped and detached, times log π_θ,
//   J = Σ_t v_t sg[clip(w_t, 1 − ε_low, 1 + ε_high)] Ã_t log π_θ(o_t),
// so every token keeps a gradient (PPO's clip drops a clipped token's entirely).
#include <algorithm>

#include "rl/math/losses/loss.h"

namespace gtpo::rl::losses {
namespace {

LossTerm term(const TokenRatio& w, double logprob, double a, bool, const RlConfig& c) {
  const double clipped = std::clamp(w.ratio, 1.0 - c.clip_low, 1.0 + c.clip_high);
  const ClipStatus status = w.ratio < 1.0 - c.clip_low    ? ClipStatus::Low
                            : w.ratio > 1.0 + c.clip_high ? ClipStatus::High
                                                          : ClipStatus::None;
  return {-clipped * a * logprob, -clipped * a, status};
}

}  // namespace

PolicyLoss cispo() {
  return {.name = "cispo",
          .summary = "clipped IS weight times log π, gradient through every token",
          .token_term = term};
}

}  // namespace gtpo::rl::losses
