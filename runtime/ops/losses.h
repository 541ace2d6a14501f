// Losses over a vocabulary: cross-entropy (supervised) and the fused per-token log-prob + entropy (RL).
//
// logits are [..., V] f32 (usually [N, V]); targets are i32 with logits' leading shape [...]. Targets are
// checked on the host before any kernel runs. Every sum over the vocabulary is taken in double in a fixed
// order after subtracting the row max, so logits up to +-1e4 neither overflow nor lose the small terms;
// the terms at the max are counted apart (log S = log c + log1p(rest / c)), so a peaked row's log p ~ 0
// and entropy ~ 0 keep their relative precision. On the CPU e^x is a vectorised polynomial within 1.4 ulp
// of exp, flushed to 0 below e^-87. Logits must be finite (inf or NaN give NaN).
// The per-row log-sum-exp is kept in fp32 for backward: p is recomputed as exp(z - lse), which is exact
// for logits perturbed by at most half an ulp of |lse| (the same size as the rounding of the logits
// themselves).
#pragma once
#include <cstdint>

#include "runtime/tensor.h"

namespace gtpo::ops {

constexpr int32_t kIgnoreIndex = -100;

// Per-row losses [...]: loss = lse(x) - x[target]; 0 where target == ignore_index. Differentiable
// w.r.t. logits. Targets must be in [0, V) or equal ignore_index.
Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, int32_t ignore_index = kIgnoreIndex);

// Scalar mean of cross_entropy_rows over the rows whose target is not ignore_index (0 when every row is
// ignored). The mean is the fp32 sum of the row losses, in row order, times 1/count.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int32_t ignore_index = kIgnoreIndex);

struct LogprobEntropy {
  Tensor logprob;  // [...]: z[target] - lse(z)
  Tensor entropy;  // [...]: -sum_k p_k log p_k over the full vocabulary, p = softmax(z)
};

// With z = logits * (1 / temperature) (computed in fp32): the log-probability of each target and the
// entropy of each row's distribution, both differentiable w.r.t. logits through one node (the gradients
// of both outputs are fused into one pass). Targets must be in [0, V); temperature must be positive.
LogprobEntropy token_logprob_entropy(const Tensor& logits, const Tensor& targets, float temperature = 1.0f);

}  // namespace gtpo::ops
