// The entropy factor that multiplies α2 (GTPO, at one position) or β2 (GRPO-S, in one group) for each
// active member of one outcome set. It is where the two readings of the paper's weight ratio live.
#pragma once
#include <cstddef>

#include "rl/math/rl_config.h"

namespace gtpo::rl {

// values[0..count): H (or Ĥ) of the active members of one set. out[k] receives, with x = values:
//   arith, positive:  count · x_k / Σ x            (Eq. 3, Eq. 9; uniform 1 when Σ x < ε)
//   arith, negative:  count · (1/(x_k+ε)) / Σ 1/(x+ε)   (Eq. 5, Eq. 9)
//   geo,   positive:  (x_k+ε) / GM(x+ε)             (Appendix C; inactive members count as 1, i.e. are left
//   out) geo,   negative:  GM(x+ε) / (x_k+ε)
// The arith factors average exactly 1 over the set (conservation, Prop. 2.2); the geo ones do not.
void entropy_weights(const double* values, std::size_t count, bool positive, MeanKind kind, double eps,
                     double* out);

}  // namespace gtpo::rl
