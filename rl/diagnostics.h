// What a researcher needs to see about one batch's advantages (see docs/algorithms.md, "Diagnostics").
#pragma once
#include <vector>

#include "rl/grouping.h"
#include "rl/rollout.h"

namespace gtpo::rl {

// Fills every field of Diagnostics from the batch and the finished per-response results. keep[g] says
// whether group g of the grouping survived dynamic sampling.
Diagnostics compute_diagnostics(const std::vector<Response>& batch, const Grouping& groups,
                                const std::vector<bool>& keep, const std::vector<ResponseResult>& results);

// Pearson correlation of two equally long samples; NaN when fewer than two points or either is constant.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace gtpo::rl
