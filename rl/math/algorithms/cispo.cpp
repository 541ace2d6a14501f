// CISPO, Clipped IS-weight Policy Optimization (MiniMax-M1, Chen et al. 2025): GRPO's advantage with a loss
// that clips the importance weight, not the update,
//   J = (1/Σ|o_i|) Σ_i Σ_t sg[clip(w_{i,t}, 1 − ε_low, 1 + ε_high)] Â_{i,t} log π_θ(o_{i,t}),
// so every token keeps a gradient (PPO's clip drops the gradient of a clipped token entirely: the rare,
// high-entropy "fork" tokens are the ones that get clipped). The paper sets no lower bound (ε_low large: 1
// here, the weight is then never below 0) and tunes the upper one; ScaleRL (Khatri et al. 2025) uses an upper
// bound of 5 on w, i.e. ε_high 4, which TRL's documentation recommends. verl and Trinity-RFT leave both to
// the user (Trinity-RFT's defaults are 1.0 and 0.28).
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  verl_defaults(c);
  c.clip_low = 1.0;
  c.clip_high = 4.0;
  c.policy_loss = "cispo";
}

}  // namespace

Algorithm cispo() {
  return {.name = "cispo",
          .summary = "CISPO: GRPO's advantage, loss -sg[clip(w)] A log pi on every token, token-mean",
          .set_defaults = defaults,
          .compute = grpo_compute};
}

}  // namespace gtpo::rl::algorithms
