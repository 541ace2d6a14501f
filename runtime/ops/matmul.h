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

// A Linear weight [out, in] laid out for many products with a few rows each (decoding). Where the backend's
// GEMM packs a transposed weight into column panels on every call (Backend::gemm_b_panel_width: the CPU's
// register kernel), the panels are made once here: [panels, in, width], the last one zero-padded. Elsewhere
// it is the weight itself. A snapshot: prepare again after the weight changes.
struct PreparedWeight {
  Tensor data;  // [panels, in, width], or the weight [out, in] when width == 0
  int64_t out = 0, in = 0, width = 0;
};
PreparedWeight prepare_weight(const Tensor& weight);

// linear(x, weight, bias) with a prepared weight: the same values, bit for bit (each output is the same
// chain of multiply-adds, read from the panels as it would have been packed). Inference only: x must not
// need a gradient recorded.
Tensor linear(const Tensor& x, const PreparedWeight& weight, const Tensor& bias = Tensor());

}  // namespace gtpo::ops
