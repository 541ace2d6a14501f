// DAPO with forking tokens (Wang et al. 2025, "Beyond the 80/20 rule"): DAPO's advantages, but the loss
// keeps only tokens whose H is in the top ρ of the batch:
//   J = 1/Σ|o_i| · Σ_i Σ_t 1[H_{i,t} ≥ τ_ρ] · min(w Â, clip(w) Â), masked out of numerator and denominator.
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/dapo.h"
#include "rl/math/entropy_mask.h"

namespace gtpo::rl::algorithms {
namespace {

void defaults(RlConfig& c) {
  dapo_defaults(c);
  c.forking_rho = 0.2;
}

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  dapo_compute(in, out);
  apply_top_entropy_mask(in.batch, out.responses, in.cfg.forking_rho);
}

std::vector<RlKey> keys() {
  return {config::field("dapo_forking", "rho", &RlConfig::forking_rho, config::number(0, 1, true),
                        "dapo_forking: fraction of highest-entropy tokens kept in the loss")};
}

}  // namespace

Algorithm dapo_forking() {
  return {"dapo_forking",
          "DAPO with forking tokens: loss only on the top dapo_forking.rho entropy tokens",
          defaults,
          compute,
          /*needs_entropies=*/true,
          /*token_level_shaping=*/false,
          /*sequence_level_loss=*/false,
          /*outcome_from_correctness=*/nullptr,
          keys};
}

}  // namespace gtpo::rl::algorithms
