// Matrix products.
#pragma once
#include "runtime/tensor.h"

namespace gtpo::ops {

// op(a) @ op(b), op = transpose of the last two dims when the flag is set.
//  - a [..., m, k] and b [k, n]: a's leading dims are flattened (a shared weight);
//  - a [B..., m, k] and b [B..., k, n] with equal leading dims: a batched product.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// x [..., in] @ weight[out, in]^T (+ bias [out]): the layout of a PyTorch nn.Linear.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace gtpo::ops
