// The sequence loss of GRPO-S (paper Eqs. 10-11) and GSPO (Zheng et al. 2025): one ratio per response,
//   ŵ_i = (1/|o_i|) Σ_t w_{i,t} (arith)  or  exp((1/|o_i|) Σ_t log w_{i,t}) (geo: GSPO's s_i),
//   J = Σ_i v_i min(ŵ_i Â_i, clip(ŵ_i, 1 − ε_low, 1 + ε_high) Â_i),
// so a whole response is clipped or not. Which mean is the algorithm's (Algorithm::sequence_ratio).
#include <cmath>

#include "rl/math/losses/loss.h"

namespace gtpo::rl {

void sequence_terms(const std::vector<TokenRatio>& r, const PolicyLossInputs& in, const RlConfig& c,
                    LossSums& sums, std::vector<float>& dlp, ClipStatuses& status) {
  const bool arith = in.seq_ratio == MeanKind::Arith;
  for (size_t s = 0; s < in.seq_advantages.size(); ++s) {
    const double v = in.seq_weights[s];
    const int64_t b = in.seq_begin[s], e = in.seq_end[s];
    if (v == 0.0 || e == b) continue;
    const double len = static_cast<double>(e - b);
    double seq_ratio = 0.0;
    if (arith) {
      for (int64_t t = b; t < e; ++t) seq_ratio += r[static_cast<size_t>(t)].ratio;
      seq_ratio /= len;
    } else {
      for (int64_t t = b; t < e; ++t) seq_ratio += r[static_cast<size_t>(t)].log_ratio;
      seq_ratio = std::exp(seq_ratio / len);
    }
    const LossTerm sur = clipped_surrogate(seq_ratio, in.seq_advantages[s], c);
    const double is = in.seq_is_weights.empty() ? 1.0 : in.seq_is_weights[s];
    sums.add(v, is, sur.loss, sur.status);
    for (int64_t t = b; t < e; ++t) {
      const size_t i = static_cast<size_t>(t);
      const double dratio = r[i].dratio();
      const double dseq = arith ? dratio / len : (dratio > 0.0 ? seq_ratio / len : 0.0);
      dlp[i] += static_cast<float>(v * is * sur.dloss * dseq);
      status[i] = sur.status;
    }
  }
}

namespace losses {

PolicyLoss sequence() {
  return {.name = "sequence",
          .summary = "PPO's clip on one ratio per response (GSPO, GRPO-S Eq. 10)",
          .reads_dual_clip = true};
}

}  // namespace losses
}  // namespace gtpo::rl
