// The Linear weights as decoding reads them (ops::prepare_weight): where the backend's GEMM packs a
// transposed [out, in] weight into panels on every call (the CPU's register kernel), a rollout, which
// multiplies every weight by one row per sequence at each decode step, packed all the weights once per step
// (≈ 7% of the larger TRL job's RL step, docs/performance.md). Here each weight is prepared once per change
// (its storage's version: the optimiser's writes bump it), with the same bits.
#pragma once
#include <unordered_map>

#include "runtime/ops/matmul.h"
#include "runtime/tensor.h"

namespace gtpo::model {

class DecodeWeights {
 public:
  // x [..., in] @ weight[out, in]^T (+ bias [out]): ops::linear's value, bit for bit. Inference only (under
  // NoGradGuard); not for concurrent use (one decode loop per model at a time).
  Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

  void clear() { prepared_.clear(); }

 private:
  struct Prepared {
    Tensor weight;  // held, so that its address cannot be reused by another tensor while this lives
    uint32_t version = 0;
    ops::PreparedWeight prepared;
  };
  std::unordered_map<const TensorImpl*, Prepared> prepared_;
};

}  // namespace gtpo::model
