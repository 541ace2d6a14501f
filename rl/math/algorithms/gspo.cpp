// GSPO, Group Sequence Policy Optimization (Zheng et al. 2025, Qwen): GRPO's advantage with one importance
// ratio per response, length-normalised,
//   s_i(θ) = (π_θ(o_i|q)/π_old(o_i|q))^(1/|o_i|) = exp((1/|o_i|) Σ_t log w_{i,t}),
//   J = (1/G) Σ_i min(s_i Â_i, clip(s_i, 1 − ε_low, 1 + ε_high) Â_i),
// so a whole response is clipped or not. The paper's clip range is tiny (ε_low 3e-4, ε_high 4e-4; TRL's
// paper index sets the same): s_i is a geometric mean and moves far less than a token ratio. verl runs the
// GSPO-token form, whose value and gradient equal this one when every token of o_i has the same Â_i.
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/grpo.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  c.clip_low = 3e-4;
  c.clip_high = 4e-4;
  c.loss_agg = LossAgg::SeqMeanTokenMean;  // unused: a sequence-level loss weighs responses by 1/G
  c.dynamic_sampling = false;
  c.overlong = Overlong::None;
}

}  // namespace

Algorithm gspo() {
  return {
      .name = "gspo",
      .summary = "GSPO: GRPO's advantage, one clipped ratio per response exp(mean_t log w), clip 3e-4/4e-4",
      .set_defaults = defaults,
      .compute = grpo_compute,
      .sequence_ratio = [](const RlConfig&) { return MeanKind::Geo; }};
}

}  // namespace gtpo::rl::algorithms
