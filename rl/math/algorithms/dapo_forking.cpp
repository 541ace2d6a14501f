// DAPO with forking tokens (Wang et al. 2025, "Beyond the 80/20 rule"): DAPO's advantages, but the loss
// keeps only tokens whose H is in the top ρ of the batch:
//   J = 1/Σ|o_i| · Σ_i Σ_t 1[H_{i,t} ≥ τ_ρ] · min(w Â, clip(w) Â)
// with the paper's normaliser, all response tokens (dapo_forking.norm all; TRL divides by all completion
// tokens too), or with the masked tokens out of the denominator as well (norm kept: each kept token then
// weighs 1/ρ times more). dapo_forking.select random keeps the same number of tokens drawn at random, the
// control that tells "which tokens" from "how much weight".
#include "rl/math/algorithms/all.h"
#include "rl/math/algorithms/dapo.h"
#include "rl/math/entropy_mask.h"

namespace gtpo::rl::algorithms {
namespace {

void compute(const AlgorithmInput& in, AdvantageResult& out) {
  dapo_compute(in, out);
  const DapoForkingConfig& f = in.cfg.dapo_forking;
  if (f.norm == ForkingNorm::All)
    for (ResponseResult& r : out.responses) r.norm_mask = r.loss_mask;
  if (f.select == ForkingSelect::Entropy)
    apply_top_entropy_mask(in.batch, out.responses, f.rho);
  else
    apply_random_token_mask(out.responses, f.rho, in.seed);
}

std::vector<RlKey> keys() {
  using config::choice;
  using config::field;
  return {
      field("dapo_forking", "rho", &RlConfig::dapo_forking, &DapoForkingConfig::rho,
            config::number(0, 1, true), "dapo_forking: fraction of highest-entropy tokens kept in the loss"),
      field("dapo_forking", "norm", &RlConfig::dapo_forking, &DapoForkingConfig::norm,
            choice<ForkingNorm>({{"all", ForkingNorm::All}, {"kept", ForkingNorm::Kept}}),
            "dapo_forking: the loss normaliser counts all response tokens (the paper, TRL) or only the kept "
            "ones"),
      field(
          "dapo_forking", "select", &RlConfig::dapo_forking, &DapoForkingConfig::select,
          choice<ForkingSelect>({{"entropy", ForkingSelect::Entropy}, {"random", ForkingSelect::Random}}),
          "dapo_forking: keep the highest-entropy tokens, or (the control) as many drawn at random with the "
          "step's seed"),
  };
}

}  // namespace

Algorithm dapo_forking() {
  return {.name = "dapo_forking",
          .summary = "DAPO with forking tokens: loss only on the top dapo_forking.rho entropy tokens",
          .set_defaults = dapo_defaults,
          .compute = compute,
          .needs_entropies = true,
          .keys = keys};
}

}  // namespace gtpo::rl::algorithms
