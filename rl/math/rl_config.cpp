#include "rl/math/rl_config.h"

#include <utility>

#include "runtime/error.h"

namespace gtpo::rl {
namespace {

using config::Codec;

const std::vector<std::pair<std::string, LossAgg>> kLossAggs = {
    {"token-mean", LossAgg::TokenMean},
    {"seq-mean-token-mean", LossAgg::SeqMeanTokenMean},
    {"seq-mean-token-sum", LossAgg::SeqMeanTokenSum},
    {"seq-mean-token-sum-norm", LossAgg::SeqMeanTokenSumNorm}};

// A count that the RL code keeps as int.
Codec<int> count(int lo) { return config::integer<int>(lo, 2147483647); }

// off | on (= 3.0) | c > 1.
Codec<double> dual_clip() {
  const std::string type = "off|on|number > 1";
  return {type,
          [type](const std::string& v) {
            if (v == "off" || v == "false" || v == "0") return 0.0;
            if (v == "on" || v == "true") return 3.0;
            try {
              return config::number(1.0, 1e300, true).parse(v);
            } catch (const Error&) {
              config::expected(type, v);
            }
          },
          [](const double& x) { return x > 0.0 ? config::format_double(x) : std::string("off"); }};
}

// auto (-1: 20% of L_max) | tokens >= 0.
Codec<int> overlong_buffer() {
  const std::string type = "auto|integer >= 0";
  return {type,
          [type](const std::string& v) {
            if (v == "auto") return -1;
            try {
              return count(0).parse(v);
            } catch (const Error&) {
              config::expected(type, v);
            }
          },
          [](const int& x) { return x < 0 ? std::string("auto") : std::to_string(x); }};
}

std::vector<RlKey> shared_keys() {
  using config::field;
  using config::number;
  const double inf = std::numeric_limits<double>::infinity();
  return {
      field("rl", "eps", &RlConfig::eps, number(0, 1, true),
            "ε added in every division of the advantage math (std, 1/H)"),
      field("rl", "clip_low", &RlConfig::clip_low, number(0, 1),
            "ε_low: the importance ratio is clipped below at 1 − clip_low (1 = no lower bound)"),
      field("rl", "clip_high", &RlConfig::clip_high, number(0, inf),
            "ε_high: the importance ratio is clipped above at 1 + clip_high"),
      field("rl", "dual_clip", &RlConfig::dual_clip, dual_clip(),
            "dual clip c for negative advantages (on = 3.0)"),
      field(
          "rl", "rollout_correction", &RlConfig::rollout_correction,
          config::choice<RolloutCorrection>({{"none", RolloutCorrection::None},
                                             {"tis", RolloutCorrection::Tis},
                                             {"mis", RolloutCorrection::Mis}}),
          "sampler-trainer correction: the trainer scores the rollout again (one more forward) for π_old, "
          "and "
          "each token's loss is weighted by ρ = π_old/π_sampler truncated at the cap (tis) or dropped above "
          "it (mis); sequence-level losses use ρ's geometric mean over the response"),
      field("rl", "rollout_correction_cap", &RlConfig::rollout_correction_cap, number(1, inf),
            "C of rl.rollout_correction"),
      field("rl", "loss_agg", &RlConfig::loss_agg, config::choice(kLossAggs),
            "how per-token losses are averaged over the mini-batch"),
      field("rl", "dynamic_sampling", &RlConfig::dynamic_sampling, config::boolean(),
            "drop groups whose responses are all correct or all wrong and sample more prompts"),
      field("rl", "max_resample_rounds", &RlConfig::max_resample_rounds, count(0),
            "extra sampling rounds dynamic sampling may take per step"),
      field("rl", "overlong", &RlConfig::overlong,
            config::choice<Overlong>(
                {{"none", Overlong::None}, {"dapo_soft", Overlong::DapoSoft}, {"grop", Overlong::Grop}}),
            "length penalty: DAPO's soft overlong punishment or GRoP"),
      field("rl", "overlong_buffer", &RlConfig::overlong_buffer, overlong_buffer(),
            "L_cache of dapo_soft in tokens; auto = 20% of sampler.max_new_tokens"),
      field("rl", "mask_truncated", &RlConfig::mask_truncated, config::boolean(),
            "leave truncated responses out of the loss"),
      field("rl", "kl_coef", &RlConfig::kl_coef, number(0, inf),
            "weight of the KL to a frozen reference model; 0 = no reference model"),
      field("rl", "kl_estimator", &RlConfig::kl_estimator,
            config::choice<KlEstimator>(
                {{"k1", KlEstimator::K1}, {"k2", KlEstimator::K2}, {"k3", KlEstimator::K3}}),
            "KL estimator (k3 = e^−x − 1 + x, x = log π_θ − log π_ref)"),
  };
}

// The update phase's keys: the entropy bonus and its target, the passes and the batch splits.
std::vector<RlKey> update_keys() {
  using config::field;
  using config::number;
  const double inf = std::numeric_limits<double>::infinity();
  return {
      field("rl", "entropy_coef", &RlConfig::entropy_coef, number(),
            "entropy bonus: −entropy_coef · mean entropy is added to the loss (with rl.entropy_target: the "
            "first step's coefficient)"),
      field("rl", "entropy_target", &RlConfig::entropy_target, number(0, inf),
            "mean token entropy in nats (entropy_mean) that an adaptive entropy coefficient steers to: after "
            "each step the coefficient moves up by rl.entropy_target_step when entropy_mean was below the "
            "target, down when above (Skywork-OR1's adaptive entropy control; it may go below 0); 0 = off"),
      field("rl", "entropy_target_step", &RlConfig::entropy_target_step, number(0, inf, true),
            "Δ: how much the adaptive entropy coefficient moves per step (with rl.entropy_target)"),
      field("rl", "ppo_epochs", &RlConfig::ppo_epochs, count(1),
            "passes of clipped updates over each rollout batch"),
      field("rl", "mini_batch_prompts", &RlConfig::mini_batch_prompts, count(0),
            "prompts per optimiser step within a pass; 0 = every prompt of the step"),
      field("rl", "micro_batch_tokens", &RlConfig::micro_batch_tokens, config::integer<int64_t>(0),
            "padded tokens (prompt + response) of one forward/backward; the mini-batch is split into "
            "micro-batches "
            "that fit and their gradients add up to the same update; 0 = no bound"),
      field("rl", "micro_batch_memory_mb", &RlConfig::micro_batch_memory_mb, config::integer<int64_t>(0),
            "with micro_batch_tokens 0: micro-batches hold at most this many MiB of activations, by an "
            "estimate "
            "of the model's bytes per token (model/memory_estimate.h); small models never reach it; 0 = no "
            "bound"),
      field(
          "rl", "group_by_length", &RlConfig::group_by_length, config::boolean(),
          "sort the mini-batch's sequences by length and cut it into micro-batches padded only to their own "
          "longest, wherever the padding saved outweighs one more forward/backward (with share_prompts, also "
          "priced: a prompt computed again in each micro-batch its group is spread over, so a group's "
          "samples "
          "stay together where that is cheaper); false = micro-batches in rollout order (with "
          "micro_batch_tokens 0: the whole mini-batch at once)"),
      field(
          "rl", "share_prompts", &RlConfig::share_prompts, config::boolean(),
          "compute each distinct prompt of a micro-batch once, its rows read by every response of its group, "
          "and logits only where a response token is predicted: the same log-probs, gradients summed in "
          "another order; false = every sequence padded and computed in full"),
  };
}

}  // namespace

std::vector<RlKey> shared_rl_keys() {
  std::vector<RlKey> k = shared_keys();
  for (RlKey& key : update_keys()) k.push_back(std::move(key));
  return k;
}

int overlong_buffer_tokens(const RlConfig& cfg, int max_new_tokens) {
  if (cfg.overlong_buffer >= 0) return cfg.overlong_buffer;
  return max_new_tokens / 5;  // 20% of L_max, rounded down
}

const char* to_string(LossAgg v) {
  for (const auto& [word, c] : kLossAggs)
    if (c == v) return word.c_str();
  return "?";
}

}  // namespace gtpo::rl
