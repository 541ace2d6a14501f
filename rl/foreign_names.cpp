#include "rl/foreign_names.h"

namespace gtpo::rl {

namespace {
// The last dotted component: what a user is likely to type on its own.
std::string last_part(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

// " (STACK's NAME is gtpo's KEY)", built by appends (GCC 12 warns falsely on literal + string here).
std::string hint(const char* stack, const char* name, const char* key) {
  std::string out = " (";
  out.append(stack).append("'s ").append(name).append(" is gtpo's ").append(key).append(")");
  return out;
}

std::string code_or_dash(const char* name) {
  if (*name == '\0') return "–";
  std::string out = "`";
  out.append(name).append("`");
  return out;
}

}  // namespace

const std::vector<ForeignNames>& foreign_names() {
  static const std::vector<ForeignNames> table = {
      {"sampler.group_size", "num_generations", "actor_rollout_ref.rollout.n"},
      {"sampler.temperature", "temperature", "actor_rollout_ref.rollout.temperature"},
      {"sampler.top_k", "top_k", "actor_rollout_ref.rollout.top_k"},
      {"sampler.top_p", "top_p", "actor_rollout_ref.rollout.top_p"},
      {"sampler.max_new_tokens", "max_completion_length", "data.max_response_length"},
      {"rl.algo", "", "algorithm.adv_estimator"},
      {"rl.clip_low", "epsilon", "actor_rollout_ref.actor.clip_ratio_low"},
      {"rl.clip_high", "epsilon_high", "actor_rollout_ref.actor.clip_ratio_high"},
      {"rl.dual_clip", "", "actor_rollout_ref.actor.clip_ratio_c"},
      {"rl.loss_agg", "loss_type", "actor_rollout_ref.actor.loss_agg_mode"},
      {"rl.policy_loss", "", "actor_rollout_ref.actor.policy_loss.loss_mode"},
      {"rl.rollout_correction_cap", "", "algorithm.rollout_correction.rollout_is_threshold"},
      {"clip_cov.ratio", "", "actor_rollout_ref.actor.policy_loss.clip_cov_ratio"},
      {"kl_cov.ratio", "", "actor_rollout_ref.actor.policy_loss.kl_cov_ratio"},
      {"kl_cov.coef", "", "actor_rollout_ref.actor.policy_loss.ppo_kl_coef"},
      {"rl.dynamic_sampling", "", "algorithm.filter_groups.enable"},
      {"rl.max_resample_rounds", "", "algorithm.filter_groups.max_num_gen_batches"},
      {"rl.overlong_buffer", "", "reward_model.overlong_buffer.len"},
      {"rl.mask_truncated", "mask_truncated_completions", ""},
      {"rl.kl_coef", "beta", "actor_rollout_ref.actor.kl_loss_coef"},
      {"rl.kl_estimator", "", "actor_rollout_ref.actor.kl_loss_type"},
      {"rl.entropy_coef", "entropy_coef", "actor_rollout_ref.actor.entropy_coeff"},
      {"rl.ppo_epochs", "num_iterations", "actor_rollout_ref.actor.ppo_epochs"},
      {"rl.mini_batch_prompts", "", "actor_rollout_ref.actor.ppo_mini_batch_size"},
      {"rl.micro_batch_tokens", "", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"},
      {"dapo_forking.rho", "top_entropy_quantile", ""},
      {"reward.functions[].weight", "reward_weights", ""},
      {"optim.lr", "learning_rate", "actor_rollout_ref.actor.optim.lr"},
      {"optim.beta1", "adam_beta1", ""},
      {"optim.beta2", "adam_beta2", ""},
      {"optim.eps", "adam_epsilon", ""},
      {"optim.weight_decay", "weight_decay", "actor_rollout_ref.actor.optim.weight_decay"},
      {"optim.grad_clip", "max_grad_norm", "actor_rollout_ref.actor.grad_clip"},
      {"optim.schedule", "lr_scheduler_type", "actor_rollout_ref.actor.optim.warmup_style"},
      {"optim.warmup_steps", "warmup_steps", "actor_rollout_ref.actor.optim.lr_warmup_steps"},
      {"optim.min_lr_ratio", "", "actor_rollout_ref.actor.optim.min_lr_ratio"},
      {"train.steps", "max_steps", "trainer.total_training_steps"},
      {"train.prompts_per_step", "", "data.train_batch_size"},
      {"train.seed", "seed", ""},
      {"train.out_dir", "output_dir", "trainer.default_local_dir"},
      {"train.init_from", "model_name_or_path", "actor_rollout_ref.model.path"},
      {"train.checkpoint_every", "save_steps", "trainer.save_freq"},
      {"train.keep_checkpoints", "save_total_limit", "trainer.max_actor_ckpt_to_keep"},
      {"eval.every", "eval_steps", "trainer.test_freq"},
      {"log.every", "logging_steps", ""},
      {"log.samples", "num_completions_to_print", ""},
  };
  return table;
}

std::string foreign_name_hint(const std::string& name, bool exact) {
  const std::string part = exact ? name : last_part(name);
  for (const ForeignNames& f : foreign_names()) {
    const std::string trl = f.trl, verl = f.verl;
    if (!trl.empty() && (name == trl || part == trl)) return hint("TRL", f.trl, f.key);
    if (!verl.empty() && (name == verl || (!exact && part == last_part(verl))))
      return hint("verl", f.verl, f.key);
  }
  return "";
}

std::string foreign_names_cell(const std::string& key) {
  for (const ForeignNames& f : foreign_names())
    if (key == f.key) return code_or_dash(f.trl) + " / " + code_or_dash(f.verl);
  return "";
}

}  // namespace gtpo::rl
