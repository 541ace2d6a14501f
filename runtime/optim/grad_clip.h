// Global gradient-norm clipping, as torch.nn.utils.clip_grad_norm_.
#pragma once
#include "runtime/optim/parameters.h"

namespace gtpo::optim {

// Returns the L2 norm of all parameter gradients taken together, before clipping. Parameters without a
// gradient contribute nothing. The sum of squares is accumulated in double, per parameter through
// Backend::sum_squares and across parameters in registration order, so the norm is bitwise reproducible.
//
// When max_norm > 0 and norm > max_norm, every gradient is scaled in place by max_norm / (norm + 1e-6)
// (PyTorch's coefficient; the 1e-6 guards a tiny norm). max_norm <= 0 disables clipping but the norm is
// still returned (for logging). A non-finite norm (a NaN or inf gradient) is returned without scaling:
// scaling would turn every gradient into NaN or 0 and hide where the problem came from; the caller
// decides (typically: skip the step and report).
float clip_grad_norm(const ParameterStore& params, float max_norm);

// The factor clip_grad_norm scales every gradient by for a global NORM, or 1 where it leaves them alone.
float clip_coefficient(double norm, float max_norm);

// The global norm alone, without clipping.
double grad_norm(const ParameterStore& params);

}  // namespace gtpo::optim
