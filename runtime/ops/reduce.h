// Sums and means over one axis or over everything.
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

Tensor sum(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor sum_all(const Tensor& x);   // shape []
Tensor mean_all(const Tensor& x);  // shape []

}  // namespace gtpo::ops
