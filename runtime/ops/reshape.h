// Reshape: a view of the same storage with another shape (one dim may be -1).
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

Tensor reshape(const Tensor& x, const Shape& shape);

}  // namespace gtpo::ops
