// The importance-weighted policy gradient with no clip (PPO's surrogate before clipping; verl's vanilla loss
// with the clip taken out):
//   J = Σ_t v_t w_t Ã_t,  w_t = π_θ(o_t)/π_old(o_t),
// so every token keeps its gradient w_t Ã_t however far the ratio moves. On-policy (w = 1) it is REINFORCE
// with the advantage; it equals the clip loss with ε_low = 1 and ε_high past every ratio.
#include "rl/math/losses/loss.h"

namespace gtpo::rl::losses {
namespace {

LossTerm term(const TokenRatio& w, double, double a, bool, const RlConfig&) {
  return {-w.ratio * a, -a * w.dratio(), ClipStatus::None};
}

}  // namespace

PolicyLoss unclipped() {
  return {.name = "unclipped",
          .summary = "the IS-weighted advantage w·Â, no clip",
          .token_term = term,
          .reads_clip_range = false};
}

}  // namespace gtpo::rl::losses
