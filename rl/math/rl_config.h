// Every switch of the RL contract (shared/spec/rl-algorithms.md) with its default, and the shared rl.* schema
// rows that set them from text. The algorithms include it; it knows none of them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/config_codec.h"

namespace gtpo::rl {

enum class AdvNorm { Joint, Separate };      // gtpo.adv_norm
enum class Scope { Group, Batch };           // gtpo.scope
enum class MeanKind { Arith, Geo };          // gtpo.weights, grpo_s.weights, grpo_s.ratio
enum class Outcome { Correctness, Reward };  // gtpo.outcome, grpo_s.outcome: what r_i of α1·r_i / β1·r_i is
enum class Overlong { None, DapoSoft, Grop };                                              // rl.overlong
enum class LossAgg { TokenMean, SeqMeanTokenMean, SeqMeanTokenSum, SeqMeanTokenSumNorm };  // rl.loss_agg
enum class KlEstimator { K1, K2, K3 };                                                     // rl.kl_estimator
enum class RolloutCorrection { None, Tis, Mis };  // rl.rollout_correction
enum class ForkingNorm { All, Kept };             // dapo_forking.norm
enum class ForkingSelect { Entropy, Random };     // dapo_forking.select

struct GtpoConfig {
  double alpha1 = 1.0;
  double alpha2 = 0.1;
  AdvNorm adv_norm = AdvNorm::Joint;
  Scope scope = Scope::Group;
  MeanKind weights = MeanKind::Arith;
  Outcome outcome = Outcome::Correctness;
};

struct GrpoSConfig {
  double beta1 = 1.0;
  double beta2 = 0.1;
  MeanKind weights = MeanKind::Arith;
  MeanKind ratio = MeanKind::Arith;
  Outcome outcome = Outcome::Correctness;
};

struct ClipCovConfig {  // clip_cov.*: Cui et al. 2025, the paper's and verl's defaults
  double ratio = 2e-4;  // share of the loss tokens detached
  double lb = 1.0;      // candidates have lb < Cov < ub
  double ub = 5.0;
};

struct KlCovConfig {    // kl_cov.*
  double ratio = 2e-3;  // share of the loss tokens (largest Cov) that get the |log ratio| penalty
  double coef = 1.0;    // its weight
};

struct DapoForkingConfig {  // dapo_forking.*
  double rho = 0.2;         // share of the loss tokens kept
  ForkingNorm norm = ForkingNorm::All;
  ForkingSelect select = ForkingSelect::Entropy;
};

struct EntropyAdvConfig {  // entropy_adv.*: Cheng et al. 2025, ψ = min(α·H, |A|/κ)
  double alpha = 0.4;
  double kappa = 2.0;
};

struct RlConfig {
  std::string algo = "grpo";
  double eps = 1e-6;       // rl.eps
  double clip_low = 0.2;   // rl.clip_low  (ε_low)
  double clip_high = 0.2;  // rl.clip_high (ε_high)
  double dual_clip = 0.0;  // rl.dual_clip: c for Â < 0; 0 = off
  std::string policy_loss = "clip";  // a token loss of rl/math/losses/loss_registry.cpp
  RolloutCorrection rollout_correction = RolloutCorrection::None;
  double rollout_correction_cap = 2.0;  // C of TIS (min(ρ, C)) and MIS (ρ > C masked)
  LossAgg loss_agg = LossAgg::SeqMeanTokenMean;
  bool dynamic_sampling = false;
  int max_resample_rounds = 10;
  Overlong overlong = Overlong::None;
  int overlong_buffer = -1;  // L_cache in tokens; < 0 = 20% of L_max
  bool mask_truncated = false;
  double kl_coef = 0.0;
  KlEstimator kl_estimator = KlEstimator::K3;
  double entropy_coef = 0.0;
  double entropy_target = 0.0;         // rl.entropy_target in nats; 0 = off (entropy_coef stays fixed)
  double entropy_target_step = 0.005;  // Δ of the adaptive coefficient (rl/math/entropy_control.h)
  int ppo_epochs = 1;
  int mini_batch_prompts = 0;      // 0 = every prompt of the step in one mini-batch
  int64_t micro_batch_tokens = 0;  // padded tokens per forward/backward; 0 = no bound
  int64_t micro_batch_memory_mb =
      512;                      // with micro_batch_tokens 0: the activation memory it bounds; 0 = none
  bool group_by_length = true;  // micro-batches of similar lengths, cut where padding costs more
  bool share_prompts = true;    // a micro-batch computes each distinct prompt once
  GtpoConfig gtpo;
  GrpoSConfig grpo_s;
  DapoForkingConfig dapo_forking;
  ClipCovConfig clip_cov;
  KlCovConfig kl_cov;
  EntropyAdvConfig entropy_adv;
};

using RlKey = config::Key<RlConfig>;

// The rl.* rows every algorithm shares; rl/math/algorithm_registry.h adds the losses' (rl.policy_loss and
// their sections) and each algorithm's own (rl_keys).
std::vector<RlKey> shared_rl_keys();

// L_cache of DAPO's soft overlong punishment after resolving the 20%-of-L_max default.
int overlong_buffer_tokens(const RlConfig& cfg, int max_new_tokens);

const char* to_string(LossAgg v);

}  // namespace gtpo::rl
