// The PPO-style clipped policy losses (spec "GTPO Loss (Eq. 7)", "GRPO-S" Eq. 10-11, "Shared pieces") and
// the other per-token losses of rl.policy_loss (CISPO, Clip-Cov, KL-Cov), with the sampler-trainer
// correction of rl.rollout_correction, as one autograd node over the per-token log-probs (and entropies) of
// π_θ.
//
// Everything that does not depend on θ — old log-probs, advantages, reference log-probs and the
// aggregation weights fixed over the whole mini-batch — is host data, so the loss of a micro-batch is
// exactly its share of the mini-batch loss and gradients add up over any split.
#pragma once
#include <cstdint>
#include <vector>

#include "rl/math/rl_config.h"
#include "runtime/tensor.h"

namespace gtpo::rl {

// One micro-batch, flattened over its response tokens (response-major).
struct PolicyLossInputs {
  std::vector<float> old_logprobs;     // log π_old per token
  std::vector<float> advantages;       // Ã per token (token-level losses)
  std::vector<float> token_weights;    // aggregation weight per token (token_loss_weights); 0 = masked out
  std::vector<float> ref_logprobs;     // log π_ref per token; empty when kl_coef == 0
  // rl.policy_loss clip_cov / kl_cov: 1 = the token is detached / penalised (rl/math/covariance_selection.h).
  std::vector<uint8_t> cov_selected;
  // rl.rollout_correction: the weight of each token's policy loss (truncated or masked π_old/π_sampler);
  // empty = 1 everywhere. seq_is_weights: the same per sequence for a sequence-level loss.
  std::vector<float> is_weights;
  // Sequence-level loss (grpo_s): the response tokens of sequence s are [seq_begin[s], seq_end[s]).
  bool sequence_level = false;
  std::vector<int64_t> seq_begin, seq_end;
  std::vector<float> seq_advantages;   // Â_i
  std::vector<float> seq_weights;      // v_i (sequence_loss_weights)
  std::vector<float> seq_is_weights;   // empty = 1
  MeanKind seq_ratio = MeanKind::Geo;  // ŵ_i: mean of the token ratios or their geometric mean
};

struct PolicyLossMetrics {
  double loss = 0.0;
  double policy_loss = 0.0;
  double kl_loss = 0.0;
  double entropy_bonus = 0.0;
  double clip_frac_low = 0.0;   // weighted share of tokens (or sequences) clipped at 1 - ε_low with Â < 0
  double clip_frac_high = 0.0;  // clipped at 1 + ε_high with Â > 0
  double dual_clip_frac = 0.0;
  double cov_frac = 0.0;        // weighted share of tokens selected by clip_cov / kl_cov
  double approx_kl = 0.0;       // k3 estimate of KL(π_old || π_θ), token mean over loss tokens
  double entropy_mean = 0.0;    // of π_θ, token mean over loss tokens
  double ratio_mean = 0.0;
  double ratio_max = 0.0;
  int64_t tokens = 0;           // tokens with a nonzero weight
};

// Per-token clip status of the last call, for diagnostics: 0 none, 1 low, 2 high, 3 dual, 4 selected by
// clip_cov (detached) or kl_cov (penalised). CISPO's tokens report the side their weight was clipped at.
using ClipStatus = std::vector<uint8_t>;

// logprobs [N] and entropies [N] are π_θ's (from ops::token_logprob_entropy); entropies may be undefined
// when entropy_coef == 0. Returns the scalar loss; fills metrics and clip status if given.
Tensor policy_loss(const Tensor& logprobs, const Tensor& entropies, const PolicyLossInputs& inputs,
                   const RlConfig& config, PolicyLossMetrics* metrics = nullptr, ClipStatus* clip = nullptr);

}  // namespace gtpo::rl
