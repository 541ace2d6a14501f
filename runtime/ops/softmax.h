// Softmax and log-softmax over the last dim.
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

// y = exp(x - max) / sum(exp(x - max)) over the last dim. A row that is entirely -inf gives zeros.
Tensor softmax(const Tensor& x);

// y = x - max - log(sum(exp(x - max))) over the last dim. A row that is entirely -inf gives -inf.
Tensor log_softmax(const Tensor& x);

}  // namespace gtpo::ops
