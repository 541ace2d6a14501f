// The policy losses as registered records (spec "GTPO Loss (Eq. 7)", "GRPO-S" Eqs. 10-11, "Shared pieces"):
// PPO's clip, CISPO, Clip-Cov, KL-Cov, which rl.policy_loss chooses among, and the sequence loss of GSPO and
// GRPO-S, which a sequence-level algorithm uses. Plain host arithmetic over the per-token log-probs of π_θ;
// rl/policy_loss.h wraps it in one autograd node.
//
// A token loss is its file here (a function returning a PolicyLoss) plus its line in loss_registry.cpp;
// rl.policy_loss, its documentation, the unread-settings check and the step's metrics ask the record.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "rl/math/rl_config.h"

namespace gtpo::rl {

// Per token (or per sequence of a sequence loss) of the last update, for diagnostics (samples.jsonl).
// Selected: detached by clip_cov or penalised by kl_cov. CISPO's tokens report the side their weight was
// clipped at.
enum class ClipStatus : uint8_t { None = 0, Low = 1, High = 2, Dual = 3, Selected = 4 };
using ClipStatuses = std::vector<ClipStatus>;

// π_θ/π_old of one token: log w clamped to ±20 (spec), w = exp(log w).
struct TokenRatio {
  double log_ratio = 0.0, ratio = 1.0;
  bool inside_clamp = true;
  double dratio() const { return inside_clamp ? ratio : 0.0; }  // dw/d log π_θ: 0 where the clamp holds
};

// One loss term, its derivative (by log π_θ,t for a token term, by the ratio for clipped_surrogate) and
// its clip status.
struct LossTerm {
  double loss = 0.0;
  double dloss = 0.0;
  ClipStatus status = ClipStatus::None;
};

// PPO's clipped surrogate for a ratio w and advantage a: −min(wA, clip(w, 1 − ε_low, 1 + ε_high)A), with
// rl.dual_clip's bound for A < 0; dloss is d/dw. The clip loss, Clip-Cov and the sequence loss share it.
LossTerm clipped_surrogate(double w, double a, const RlConfig& c);

// One micro-batch, flattened over its response tokens (response-major).
struct PolicyLossInputs {
  std::vector<float> old_logprobs;    // log π_old per token
  std::vector<float> advantages;      // Ã per token (token-level losses)
  std::vector<float> token_weights;   // aggregation weight per token (token_loss_weights); 0 = masked out
  std::vector<float> ref_logprobs;    // log π_ref per token; empty when kl_coef == 0
  std::vector<uint8_t> cov_selected;  // 1 = selected by the loss's select (Clip-Cov, KL-Cov); may be empty
  // rl.rollout_correction: the weight of each token's policy loss (truncated or masked π_old/π_sampler);
  // empty = 1 everywhere. seq_is_weights: the same per sequence for a sequence-level loss.
  std::vector<float> is_weights;
  // Sequence-level loss (gspo, grpo_s): the response tokens of sequence s are [seq_begin[s], seq_end[s]).
  bool sequence_level = false;
  std::vector<int64_t> seq_begin, seq_end;
  std::vector<float> seq_advantages;   // Â_i
  std::vector<float> seq_weights;      // v_i (sequence_loss_weights)
  std::vector<float> seq_is_weights;   // empty = 1
  MeanKind seq_ratio = MeanKind::Geo;  // ŵ_i: mean of the token ratios or their geometric mean
};

// The surrogate's running sums: the weighted loss and the weight in each clip status.
struct LossSums {
  double policy = 0.0, weight_low = 0.0, weight_high = 0.0, weight_dual = 0.0, weight_selected = 0.0,
         weight_total = 0.0;
  // WEIGHT is the aggregation weight; IS (rl.rollout_correction) scales the loss only.
  void add(double weight, double is, double loss, ClipStatus status) {
    policy += weight * is * loss;
    weight_total += weight;
    if (status == ClipStatus::Low) weight_low += weight;
    if (status == ClipStatus::High) weight_high += weight;
    if (status == ClipStatus::Dual) weight_dual += weight;
    if (status == ClipStatus::Selected) weight_selected += weight;
  }
};

// A token loss's term for token t: ratio w, log π_θ,t, Ã_t, and whether the loss's select picked t.
using TokenTermFn = LossTerm (*)(const TokenRatio& w, double logprob, double advantage, bool selected,
                                 const RlConfig& c);
// The tokens a loss treats apart, chosen over the whole mini-batch from Cov(log π_old, Â)
// (rl/math/covariance_selection.h) before it is split; 1 = selected.
using SelectFn = std::vector<uint8_t> (*)(const std::vector<double>& cov, const std::vector<uint8_t>& in_loss,
                                          const RlConfig& c, uint64_t seed);

struct PolicyLoss {
  const char* name = "";
  const char* summary = "";          // rl.policy_loss's documentation lists them
  TokenTermFn token_term = nullptr;  // nullptr: the sequence loss (sequence_terms, below)
  SelectFn select = nullptr;         // nullptr: no token is treated apart (no cov_frac metric)
  bool reads_clip_range = true;      // rl.clip_low, rl.clip_high
  bool reads_dual_clip = false;      // rl.dual_clip
  std::vector<RlKey> (*keys)() = nullptr;  // the rows of its own section, named as the loss (clip_cov.*)
};

// ---- sequence loss (sequence.cpp) ---------------------------------------------------------------
// Adds each sequence's clipped surrogate (in.seq_*) to SUMS, its gradient by every token's log π_θ to DLP
// and its status to every token of it in STATUS.
void sequence_terms(const std::vector<TokenRatio>& ratios, const PolicyLossInputs& in, const RlConfig& c,
                    LossSums& sums, std::vector<float>& dlp, ClipStatuses& status);

// ---- the objective (objective.cpp) -------------------------------------------------------------
// The whole policy objective of one micro-batch on the host: the chosen loss's terms (rl.policy_loss, or the
// sequence loss), the KL to the reference (rl.kl_coef) and the entropy bonus (rl.entropy_coef), with their
// gradients by the per-token log-probs and entropies of π_θ.
//
// Everything that does not depend on θ (old log-probs, advantages, reference log-probs and the aggregation
// weights fixed over the whole mini-batch) is an input, so the loss of a micro-batch is exactly its share of
// the mini-batch loss and gradients add up over any split.
struct PolicyLossMetrics {
  double loss = 0.0;
  double policy_loss = 0.0;
  double kl_loss = 0.0;
  double entropy_bonus = 0.0;
  double clip_frac_low = 0.0;   // weighted share of tokens (or sequences) clipped at 1 - ε_low with Â < 0
  double clip_frac_high = 0.0;  // clipped at 1 + ε_high with Â > 0
  double dual_clip_frac = 0.0;
  double cov_frac = 0.0;      // weighted share of tokens selected by the loss's select (clip_cov, kl_cov)
  double approx_kl = 0.0;     // k3 estimate of KL(π_old || π_θ), token mean over loss tokens
  double entropy_mean = 0.0;  // of π_θ, token mean over loss tokens
  double ratio_mean = 0.0;
  double ratio_max = 0.0;
  int64_t tokens = 0;  // tokens with a nonzero weight
};

struct PolicyLossTerms {
  double loss = 0.0;
  std::vector<float> dloss_dlogprob;  // [N]
  std::vector<float> dloss_dentropy;  // [N]; empty when rl.entropy_coef == 0
  PolicyLossMetrics metrics;
  ClipStatuses status;  // [N]
};

// LOGPROBS and ENTROPIES are π_θ's per token ([N]; ENTROPIES may be empty when rl.entropy_coef == 0 and
// no entropy metric is wanted). Throws gtpo::Error when the inputs' sizes disagree.
PolicyLossTerms policy_loss_terms(const std::vector<float>& logprobs, const std::vector<float>& entropies,
                                  const PolicyLossInputs& in, const RlConfig& c);

// ---- the registry (loss_registry.cpp) ----------------------------------------------------------
// The token losses rl.policy_loss names, in registration order (loss_registry.cpp: a loss is its file in
// rl/math/losses/ plus its line there).
const std::vector<PolicyLoss>& all_policy_losses();
// Throws gtpo::Error listing the known names when name is unknown.
const PolicyLoss& find_policy_loss(const std::string& name);
// The sequence loss of GSPO and GRPO-S (sequence.cpp), which no rl.policy_loss names.
const PolicyLoss& sequence_policy_loss();
// rl.policy_loss's row, then each loss's own rows.
std::vector<RlKey> policy_loss_keys();

}  // namespace gtpo::rl
