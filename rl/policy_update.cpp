#include "rl/policy_update.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <span>

#include "model/memory_estimate.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/covariance_selection.h"
#include "rl/math/loss_aggregation.h"
#include "rl/sequence_batch.h"
#include "runtime/dist/zero.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/optim/grad_clip.h"

namespace gtpo::rl {

namespace {

// One micro-batch laid out for scoring: padded (every position) or packed (rl.share_prompts: distinct prompt
// rows once, positions that predict a response token only). Either way the loss inputs are flat over the
// scored positions, and row r's response token t is scored at first[r] + t.
struct ScoredMicroBatch {
  std::optional<PaddedBatch> padded;
  std::optional<SharedPromptBatch> packed;
  std::vector<int64_t> first;
  size_t positions = 0;

  // Log-probs (and entropies) of every scored position under `model`, at `temperature`.
  ops::LogprobEntropy score(const model::Transformer& model, float temperature) const {
    if (packed) {
      Tensor targets = Tensor::from_ints(packed->targets, {static_cast<int64_t>(positions)}, model.device());
      return ops::token_logprob_entropy(model.forward_packed(packed->layout), targets, temperature);
    }
    const int64_t V = model.config().vocab_size;
    Tensor logits = ops::reshape(model.forward(padded->tokens), {padded->rows * padded->length, V});
    Tensor targets = Tensor::from_ints(padded->next, {padded->rows * padded->length}, model.device());
    return ops::token_logprob_entropy(logits, targets, temperature);
  }
};

ScoredMicroBatch lay_out(const RolloutBatch& batch, const std::vector<int64_t>& items, bool share_prompts,
                         int32_t pad_id, Device device) {
  ScoredMicroBatch mb;
  if (share_prompts) {
    std::vector<std::span<const int32_t>> prompts, responses;
    for (int64_t item : items) {
      const model::Sample& s = batch.items[static_cast<size_t>(item)].sample;
      prompts.emplace_back(s.prompt_tokens);
      responses.emplace_back(s.tokens);
    }
    mb.packed = pack_shared_prompts(prompts, responses, device);
    mb.first = mb.packed->response_begin;
    mb.positions = mb.packed->targets.size();
    return mb;
  }
  std::vector<std::vector<int32_t>> seqs;
  for (int64_t item : items) {
    const model::Sample& s = batch.items[static_cast<size_t>(item)].sample;
    std::vector<int32_t> seq = s.prompt_tokens;
    seq.insert(seq.end(), s.tokens.begin(), s.tokens.end());
    seqs.push_back(std::move(seq));
  }
  mb.padded = pad_right(seqs, pad_id, device);
  for (size_t row = 0; row < items.size(); ++row) {
    const model::Sample& s = batch.items[static_cast<size_t>(items[row])].sample;
    mb.first.push_back(mb.padded->predicting(static_cast<int64_t>(row), static_cast<int64_t>(s.prompt_tokens.size())));
  }
  mb.positions = static_cast<size_t>(mb.padded->rows * mb.padded->length);
  return mb;
}

// The sampler/trainer gap |log π_train − log π_sampler| over the loss tokens of the step's first update,
// where π_train is the policy the sampler ran (no optimiser step yet): largest, sum and count.
struct SamplerGap {
  double max = 0.0, sum = 0.0;
  int64_t tokens = 0;
};

// What one micro-batch reports (gathered across ranks as plain bytes).
struct MicroMetrics {
  PolicyLossMetrics loss;
  SamplerGap gap;
};

// The loss metrics that add up over micro-batches (then a mean per optimiser step), and those that are
// token-weighted means.
using Metric = double PolicyLossMetrics::*;
constexpr Metric kSummed[] = {&PolicyLossMetrics::loss, &PolicyLossMetrics::policy_loss,
                              &PolicyLossMetrics::kl_loss, &PolicyLossMetrics::entropy_bonus};
constexpr Metric kTokenMeans[] = {&PolicyLossMetrics::clip_frac_low,  &PolicyLossMetrics::clip_frac_high,
                                  &PolicyLossMetrics::dual_clip_frac, &PolicyLossMetrics::cov_frac,
                                  &PolicyLossMetrics::approx_kl,      &PolicyLossMetrics::entropy_mean,
                                  &PolicyLossMetrics::ratio_mean};

void accumulate(PolicyLossMetrics& total, const PolicyLossMetrics& m) {
  const double w = static_cast<double>(m.tokens);
  for (Metric f : kSummed) total.*f += m.*f;
  for (Metric f : kTokenMeans) total.*f += w * (m.*f);
  total.ratio_max = std::max(total.ratio_max, m.ratio_max);
  total.tokens += m.tokens;
}

// Every rank's per-micro-batch metrics of one mini-batch, in micro-batch order (ranks hold contiguous
// blocks of micro-batches), so that every rank accumulates them exactly as one process would.
std::vector<MicroMetrics> gather_metrics(dist::Communicator& comm, const std::vector<MicroMetrics>& mine) {
  if (comm.size() == 1) return mine;
  dist::ByteWriter w;
  w.put_vector(mine);
  std::vector<MicroMetrics> all;
  for (const std::vector<uint8_t>& part : comm.allgather(w.bytes(), "loss metrics")) {
    dist::ByteReader r(part);
    for (const MicroMetrics& m : r.get_vector<MicroMetrics>()) all.push_back(m);
  }
  return all;
}

// The clip statuses of the items other ranks computed (samples.jsonl shows them).
void gather_clip(dist::Communicator& comm, const std::vector<uint8_t>& computed_here,
                 std::vector<ClipStatuses>& clip) {
  if (comm.size() == 1) return;
  dist::ByteWriter w;
  for (std::size_t i = 0; i < clip.size(); ++i) {
    if (!computed_here[i]) continue;
    w.put<uint64_t>(i);
    w.put_vector(clip[i]);
  }
  for (const std::vector<uint8_t>& part : comm.allgather(w.bytes(), "clip statuses")) {
    dist::ByteReader r(part);
    while (!r.done()) {
      const uint64_t i = r.get<uint64_t>();
      GTPO_CHECK(i < clip.size(), "clip statuses: item ", i, " out of range");
      clip[i] = r.get_vector<ClipStatus>();
    }
  }
}

// One call's inputs and what it collects, shared by the steps below.
struct Update {
  model::Transformer& policy;
  const RolloutBatch& batch;
  const AdvantageResult& adv;
  const RlConfig& rl;
  const UpdateOptions& options;
  const model::Transformer* reference;
  UpdateStats& stats;
  std::vector<uint8_t> computed_here;  // items whose loss this rank computed
  // rl.rollout_correction: log π_old of every response token as the trainer scores it; empty = the sampler's.
  std::vector<std::vector<float>> trainer_old;
  bool measure_gap = false;  // in the step's first mini-batch, without rl.rollout_correction's own measure

  const std::vector<float>& old_logprobs(int64_t item) const {
    return trainer_old.empty() ? batch.items[static_cast<size_t>(item)].sample.logprobs
                               : trainer_old[static_cast<size_t>(item)];
  }
};

// A mini-batch of items [first, last): loss weights normalised over all of it, before it is split (spec:
// "Loss aggregation"), and the items with a token in the loss (only they are worth a forward).
struct MiniBatch {
  int64_t first = 0, last = 0;
  std::vector<std::vector<float>> token_w;
  std::vector<float> seq_w;
  std::vector<int64_t> active;
  std::vector<std::vector<uint8_t>> cov_selected;  // per item, with a loss that selects (clip_cov, kl_cov)
};

// The loss's selected tokens over the whole mini-batch (PolicyLoss::select), from π_old.
void select_by_covariance(const Update& u, MiniBatch& mb, uint64_t seed) {
  const SelectFn select = active_policy_loss(u.rl).select;
  if (select == nullptr) return;
  std::vector<float> old, adv;
  std::vector<uint8_t> in_loss;
  for (int64_t i = mb.first; i < mb.last; ++i) {
    const ResponseResult& r = u.adv.responses[static_cast<size_t>(i)];
    const std::vector<float>& lp = u.old_logprobs(i);
    old.insert(old.end(), lp.begin(), lp.end());
    adv.insert(adv.end(), r.advantages.begin(), r.advantages.end());
    in_loss.insert(in_loss.end(), r.loss_mask.begin(), r.loss_mask.end());
  }
  const std::vector<double> cov = token_covariances(old, adv, in_loss);
  const std::vector<uint8_t> selected = select(cov, in_loss, u.rl, seed);
  auto at = selected.begin();
  for (int64_t i = mb.first; i < mb.last; ++i) {
    const size_t len = u.adv.responses[static_cast<size_t>(i)].loss_mask.size();
    mb.cov_selected.emplace_back(at, at + static_cast<std::ptrdiff_t>(len));
    at += static_cast<std::ptrdiff_t>(len);
  }
}

MiniBatch mini_batch(const Update& u, int64_t first, int64_t last) {
  MiniBatch mb{first, last, {}, {}, {}, {}};
  std::vector<std::vector<uint8_t>> masks;
  for (int64_t i = first; i < last; ++i) masks.push_back(u.adv.responses[static_cast<size_t>(i)].loss_mask);
  const auto counted =
      normaliser_masks(u.adv.responses, static_cast<size_t>(first), static_cast<size_t>(last));
  mb.token_w = token_loss_weights(masks, u.rl.loss_agg, &counted);
  mb.seq_w = sequence_loss_weights(masks);
  for (int64_t i = first; i < last; ++i) {
    const auto& m = masks[static_cast<size_t>(i - first)];
    if (std::find(m.begin(), m.end(), 1) != m.end()) mb.active.push_back(i);
  }
  return mb;
}

// Micro-batches of the active items (rl.micro_batch_tokens, rl.group_by_length, rl.share_prompts), as
// indices into mb.active; the weights already span the whole mini-batch, so the split changes only the
// order gradients are summed in.
std::vector<std::vector<size_t>> micro_batches(const Update& u, const MiniBatch& mb) {
  std::vector<int64_t> lengths;
  for (int64_t item : mb.active) {
    const model::Sample& s = u.batch.items[static_cast<size_t>(item)].sample;
    lengths.push_back(static_cast<int64_t>(s.prompt_tokens.size() + s.tokens.size()));
  }
  const int64_t budget =
      model::micro_batch_token_budget(u.rl.micro_batch_tokens, u.rl.micro_batch_memory_mb, u.policy.config());
  MicroBatchPlan plan{budget, u.rl.group_by_length, micro_batch_overhead_tokens(u.policy.device()),
                      u.rl.share_prompts ? kPackedSlotWidth : 0};
  if (u.rl.share_prompts) {
    // Equal prompts are one set of rows in a packed micro-batch (pack_shared_prompts compares contents).
    std::map<std::vector<int32_t>, int64_t> prompt_id;
    for (int64_t item : mb.active) {
      const std::vector<int32_t>& prompt = u.batch.items[static_cast<size_t>(item)].sample.prompt_tokens;
      const int64_t id = prompt_id.try_emplace(prompt, static_cast<int64_t>(prompt_id.size())).first->second;
      plan.prompt_ids.push_back(id);
      plan.prompt_lengths.push_back(static_cast<int64_t>(prompt.size()));
    }
  }
  return plan_micro_batches(lengths, plan);
}

// rl.rollout_correction's weight for log ρ = log π_old − log π_sampler: min(ρ, C) (tis) or ρ below C, else 0
// (mis).
float correction_weight(const RlConfig& rl, double log_rho) {
  const double rho = std::exp(log_rho), cap = rl.rollout_correction_cap;
  if (rl.rollout_correction == RolloutCorrection::Tis) return static_cast<float>(std::min(rho, cap));
  return static_cast<float>(rho <= cap ? rho : 0.0);
}

double mean_log_ratio(const std::vector<float>& num, const std::vector<float>& den) {
  double sum = 0.0;
  for (size_t t = 0; t < num.size(); ++t) sum += static_cast<double>(num[t]) - den[t];
  return num.empty() ? 0.0 : sum / static_cast<double>(num.size());
}

// The policy loss's per-position inputs for the items `rows`, laid out as in mbatch.
PolicyLossInputs loss_inputs(const Update& u, const MiniBatch& mb, const std::vector<int64_t>& rows,
                             const ScoredMicroBatch& mbatch) {
  const size_t n = mbatch.positions;
  PolicyLossInputs in;
  in.old_logprobs.assign(n, 0.0f);
  in.advantages.assign(n, 0.0f);
  in.token_weights.assign(n, 0.0f);
  in.sequence_level = u.adv.sequence_level_loss;
  if (in.sequence_level) in.seq_ratio = find_algorithm(u.rl.algo).sequence_ratio(u.rl);
  if (!mb.cov_selected.empty()) in.cov_selected.assign(n, 0);
  if (!u.trainer_old.empty()) in.is_weights.assign(n, 0.0f);
  for (size_t row = 0; row < rows.size(); ++row) {
    const int64_t item = rows[row];
    const model::Sample& s = u.batch.items[static_cast<size_t>(item)].sample;
    const ResponseResult& r = u.adv.responses[static_cast<size_t>(item)];
    const int64_t first_at = mbatch.first[row];
    for (size_t t = 0; t < s.tokens.size(); ++t) {
      const size_t at = static_cast<size_t>(first_at) + t;
      in.old_logprobs[at] = u.old_logprobs(item)[t];
      in.advantages[at] = r.advantages[t];
      in.token_weights[at] = mb.token_w[static_cast<size_t>(item - mb.first)][t];
      if (!in.cov_selected.empty())
        in.cov_selected[at] = mb.cov_selected[static_cast<size_t>(item - mb.first)][t];
      if (!in.is_weights.empty())
        in.is_weights[at] =
            correction_weight(u.rl, u.trainer_old[static_cast<size_t>(item)][t] - s.logprobs[t]);
    }
    if (in.sequence_level && !u.trainer_old.empty())
      in.seq_is_weights.push_back(
          correction_weight(u.rl, mean_log_ratio(u.trainer_old[static_cast<size_t>(item)], s.logprobs)));
    if (in.sequence_level) {
      in.seq_begin.push_back(first_at);
      in.seq_end.push_back(first_at + static_cast<int64_t>(s.tokens.size()));
      in.seq_advantages.push_back(r.seq_advantage);
      in.seq_weights.push_back(mb.seq_w[static_cast<size_t>(item - mb.first)]);
    }
  }
  return in;
}

// SamplerGap over the loss tokens of ROWS, from the trainer's log-probs laid out as in mbatch.
SamplerGap sampler_gap(const Update& u, const std::vector<int64_t>& rows, const ScoredMicroBatch& mbatch,
                       const std::vector<float>& trainer) {
  SamplerGap gap;
  for (size_t row = 0; row < rows.size(); ++row) {
    const model::Sample& s = u.batch.items[static_cast<size_t>(rows[row])].sample;
    const std::vector<uint8_t>& in_loss = u.adv.responses[static_cast<size_t>(rows[row])].loss_mask;
    for (size_t t = 0; t < in_loss.size(); ++t) {
      if (!in_loss[t]) continue;
      const double d =
          std::abs(static_cast<double>(trainer[static_cast<size_t>(mbatch.first[row]) + t]) - s.logprobs[t]);
      gap.max = std::max(gap.max, d);
      gap.sum += d;
      ++gap.tokens;
    }
  }
  return gap;
}

// Forward, loss and backward of one micro-batch (gradients accumulate); its items' clip statuses.
MicroMetrics run_micro_batch(Update& u, const MiniBatch& mb, const std::vector<int64_t>& rows) {
  const ScoredMicroBatch mbatch =
      lay_out(u.batch, rows, u.rl.share_prompts, u.options.pad_id, u.policy.device());
  PolicyLossInputs in = loss_inputs(u, mb, rows, mbatch);
  if (u.rl.kl_coef != 0.0) {
    GTPO_CHECK(u.reference != nullptr, "policy update: rl.kl_coef is set but there is no reference model");
    NoGradGuard no_grad;
    in.ref_logprobs = mbatch.score(*u.reference, u.options.temperature).logprob.to_vector();
  }
  ops::LogprobEntropy lp_ent = mbatch.score(u.policy, u.options.temperature);
  MicroMetrics out;
  if (u.measure_gap) out.gap = sampler_gap(u, rows, mbatch, lp_ent.logprob.to_vector());
  PolicyLossMetrics& m = out.loss;
  ClipStatuses clip;
  // Detached entropies still feed the entropy metric when there is no entropy bonus.
  const bool entropy_needed = u.rl.entropy_coef != 0.0;
  Tensor loss = policy_loss(lp_ent.logprob, entropy_needed ? lp_ent.entropy : lp_ent.entropy.detach(), in,
                            u.rl, &m, &clip);
  loss.backward();
  for (size_t row = 0; row < rows.size(); ++row) {
    const int64_t item = rows[row];
    const model::Sample& s = u.batch.items[static_cast<size_t>(item)].sample;
    u.computed_here[static_cast<size_t>(item)] = 1;
    ClipStatuses& status = u.stats.clip[static_cast<size_t>(item)];
    status.assign(s.tokens.size(), ClipStatus::None);
    for (size_t t = 0; t < s.tokens.size(); ++t) status[t] = clip[static_cast<size_t>(mbatch.first[row]) + t];
  }
  return out;
}

// rl.rollout_correction: π_old of every item with a loss token as the trainer scores it (no gradient), in
// the micro-batches of one mini-batch over the whole batch, and how far the sampler's log-probs are from it.
void score_old_policy(Update& u) {
  const int64_t items = static_cast<int64_t>(u.batch.items.size());
  u.trainer_old.assign(static_cast<size_t>(items), {});
  for (int64_t i = 0; i < items; ++i)
    u.trainer_old[static_cast<size_t>(i)] = u.batch.items[static_cast<size_t>(i)].sample.logprobs;
  NoGradGuard no_grad;
  const MiniBatch all = mini_batch(u, 0, items);
  for (const std::vector<size_t>& micro : micro_batches(u, all)) {
    std::vector<int64_t> rows;
    for (size_t a : micro) rows.push_back(all.active[a]);
    const ScoredMicroBatch mbatch =
        lay_out(u.batch, rows, u.rl.share_prompts, u.options.pad_id, u.policy.device());
    const std::vector<float> lp = mbatch.score(u.policy, u.options.temperature).logprob.to_vector();
    for (size_t row = 0; row < rows.size(); ++row) {
      std::vector<float>& old = u.trainer_old[static_cast<size_t>(rows[row])];
      for (size_t t = 0; t < old.size(); ++t) old[t] = lp[static_cast<size_t>(mbatch.first[row]) + t];
    }
  }
  double gap_sum = 0.0, over = 0.0, tokens = 0.0;
  for (int64_t i = 0; i < items; ++i) {
    const ResponseResult& r = u.adv.responses[static_cast<size_t>(i)];
    const std::vector<float>& sampler = u.batch.items[static_cast<size_t>(i)].sample.logprobs;
    for (size_t t = 0; t < r.loss_mask.size(); ++t) {
      if (!r.loss_mask[t]) continue;
      const double log_rho = static_cast<double>(u.trainer_old[static_cast<size_t>(i)][t]) - sampler[t];
      gap_sum += std::abs(log_rho);
      u.stats.sampler_gap_max = std::max(u.stats.sampler_gap_max, std::abs(log_rho));
      over += std::exp(log_rho) > u.rl.rollout_correction_cap ? 1.0 : 0.0;
      tokens += 1.0;
    }
  }
  u.stats.sampler_gap_mean = tokens > 0 ? gap_sum / tokens : 0.0;
  u.stats.correction_frac = tokens > 0 ? over / tokens : 0.0;
}

// The losses are means per optimiser step (each step's micro-batches sum to its loss), like TRL's and
// verl's; the ratios and fractions are token-weighted means over every step.
void to_means(UpdateStats& stats) {
  PolicyLossMetrics& l = stats.loss;
  const double steps = static_cast<double>(std::max<int64_t>(stats.optimizer_steps, 1));
  for (Metric f : kSummed) l.*f /= steps;
  const double w = static_cast<double>(std::max<int64_t>(stats.loss.tokens, 1));
  for (Metric f : kTokenMeans) l.*f /= w;
  stats.tokens = l.tokens;
  stats.grad_clip_frac /= steps;
}

// Forward, loss and backward of mini-batch MB's micro-batches on this rank (gradients accumulate in the
// policy's), every rank's metrics gathered into u.stats.
void accumulate_mini_batch(Update& u, const MiniBatch& mb, dist::Communicator& comm) {
  const auto micro = micro_batches(u, mb);
  // With several ranks, the micro-batches one process would run are dealt out in contiguous blocks.
  const dist::Share share = dist::share_of(static_cast<int64_t>(micro.size()), comm.rank(), comm.size());
  std::vector<MicroMetrics> micro_metrics;
  u.measure_gap = u.stats.optimizer_steps == 0 && u.trainer_old.empty();
  for (int64_t m = share.first; m < share.last; ++m) {
    std::vector<int64_t> rows;  // the items of this micro-batch, in row order
    for (size_t a : micro[static_cast<size_t>(m)]) rows.push_back(mb.active[a]);
    micro_metrics.push_back(run_micro_batch(u, mb, rows));
  }
  SamplerGap gap;
  for (const MicroMetrics& m : gather_metrics(comm, micro_metrics)) {
    accumulate(u.stats.loss, m.loss);
    gap.max = std::max(gap.max, m.gap.max);
    gap.sum += m.gap.sum;
    gap.tokens += m.gap.tokens;
  }
  if (u.measure_gap) {
    u.stats.sampler_gap_max = gap.max;
    u.stats.sampler_gap_mean = gap.tokens > 0 ? gap.sum / static_cast<double>(gap.tokens) : 0.0;
  }
}

}  // namespace

UpdateStats run_policy_update(model::Transformer& policy, optim::AdamW& optimizer, const RolloutBatch& batch,
                              const AdvantageResult& adv, const RlConfig& rl, const UpdateOptions& options,
                              const model::Transformer* reference, dist::Communicator& comm) {
  UpdateStats stats;
  const int64_t G = std::max<int64_t>(batch.group_size, 1);
  const int64_t groups = static_cast<int64_t>(batch.items.size()) / G;
  stats.clip.resize(batch.items.size());
  Update u{policy, batch, adv, rl, options, reference, stats, std::vector<uint8_t>(batch.items.size(), 0),
           {}};
  if (groups == 0) return stats;
  if (rl.rollout_correction != RolloutCorrection::None) score_old_policy(u);
  const int64_t per_mini = rl.mini_batch_prompts > 0 ? rl.mini_batch_prompts : groups;
  for (int epoch = 0; epoch < std::max(1, rl.ppo_epochs); ++epoch) {
    for (int64_t g0 = 0; g0 < groups; g0 += per_mini) {
      MiniBatch mb = mini_batch(u, g0 * G, std::min(groups, g0 + per_mini) * G);
      select_by_covariance(u, mb,
                           options.seed + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(epoch * groups + g0));
      if (mb.active.empty()) continue;
      accumulate_mini_batch(u, mb, comm);
      const dist::OptimizerStepResult step =
          dist::optimizer_step(comm, optimizer, options.grad_clip, options.lr);
      stats.grad_norm = step.grad_norm;
      if (optim::clip_coefficient(step.grad_norm, options.grad_clip) != 1.0f) stats.grad_clip_frac += 1.0;
      stats.traffic.sent += step.traffic.sent;
      stats.traffic.received += step.traffic.received;
      stats.seconds_exchange += step.seconds_exchange;
      policy.parameters().zero_grad();
      stats.optimizer_steps++;
    }
  }
  gather_clip(comm, u.computed_here, stats.clip);
  to_means(stats);
  return stats;
}

UpdateStats policy_gradient(model::Transformer& policy, const RolloutBatch& batch, const AdvantageResult& adv,
                            const RlConfig& rl, const UpdateOptions& options,
                            const model::Transformer* reference) {
  UpdateStats stats;
  stats.clip.resize(batch.items.size());
  policy.parameters().zero_grad();
  Update u{policy, batch, adv, rl, options, reference, stats, std::vector<uint8_t>(batch.items.size(), 0),
           {}};
  if (rl.rollout_correction != RolloutCorrection::None) score_old_policy(u);
  MiniBatch mb = mini_batch(u, 0, static_cast<int64_t>(batch.items.size()));
  select_by_covariance(u, mb, options.seed);
  if (!mb.active.empty()) accumulate_mini_batch(u, mb, dist::single_process());
  to_means(stats);
  return stats;
}

}  // namespace gtpo::rl
