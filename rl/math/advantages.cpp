#include "rl/math/advantages.h"

#include "rl/math/algorithm_registry.h"
#include "rl/math/diagnostics.h"
#include "rl/math/dynamic_sampling.h"
#include "rl/math/grouping.h"
#include "rl/math/overlong.h"
#include "rl/math/token_credit.h"

namespace gtpo::rl {

AdvantageResult compute_advantages(const std::vector<Response>& batch, const RlConfig& cfg,
                                   const BatchContext& context) {
  const Algorithm& algo = find_algorithm(cfg.algo);
  validate_batch(batch, algo.needs_entropies);
  Grouping by_key;
  if (context.groups == nullptr) by_key = group_responses(batch);
  const Grouping& groups = context.groups != nullptr ? *context.groups : by_key;
  const std::vector<bool> keep = cfg.dynamic_sampling && !context.groups_filtered
                                     ? dynamic_sampling_keep(batch, groups)
                                     : std::vector<bool>(groups.members.size(), true);
  const std::vector<double> penalty = overlong_penalties(batch, groups, cfg, context.max_new_tokens);

  AdvantageResult result;
  result.algo = algo.name;
  result.token_level_shaping = algo.token_level_shaping;
  result.sequence_level_loss = algo.sequence_ratio != nullptr;
  result.responses.resize(batch.size());
  std::vector<std::vector<int>> kept_groups;
  for (std::size_t g = 0; g < groups.members.size(); ++g) {
    if (keep[g]) kept_groups.push_back(groups.members[g]);
    for (int i : groups.members[g]) {
      ResponseResult& r = result.responses[i];
      const auto len = static_cast<std::size_t>(response_length(batch[i]));
      r.dropped = !keep[g];
      r.overlong_penalty = static_cast<float>(penalty[i]);
      r.advantages.assign(len, 0.0f);
      // rl.mask_truncated keeps a truncated response in the statistics but out of the loss.
      const bool in_loss = keep[g] && !(cfg.mask_truncated && batch[i].truncated);
      r.loss_mask.assign(len, in_loss ? 1 : 0);
    }
  }
  algo.compute(AlgorithmInput{batch, kept_groups, penalty, cfg, context.seed}, result);
  if (!context.token_rewards.empty()) add_token_credit(context.token_rewards, context.token_gamma, result);
  result.diagnostics = compute_diagnostics(batch, groups, keep, result.responses);
  return result;
}

}  // namespace gtpo::rl
