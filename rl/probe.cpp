#include "rl/probe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "rl/policy_update.h"
#include "rl/reward_runner.h"
#include "rl/rl_step.h"
#include "runtime/error.h"

namespace gtpo::rl {

EntropyProfile entropy_profile(const std::vector<Response>& responses) {
  std::vector<double> h;
  for (const Response& r : responses)
    for (int t = 0; t < response_length(r); ++t) h.push_back(entropy_at(r, t));
  EntropyProfile p;
  p.tokens = static_cast<int64_t>(h.size());
  if (h.empty()) return p;
  std::sort(h.begin(), h.end());
  const auto quantile = [&](double q) {
    const double rank = std::ceil(q * static_cast<double>(h.size()) - 1e-9);
    return h[static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(h.size()))) - 1];
  };
  double sum = 0.0, above_03 = 0.0, above_067 = 0.0;
  for (double v : h) {
    sum += v;
    above_03 += v > 0.3 ? 1.0 : 0.0;
    above_067 += v > 0.67 ? 1.0 : 0.0;
  }
  const double n = static_cast<double>(h.size());
  p.mean = sum / n;
  p.p50 = quantile(0.5);
  p.p80 = quantile(0.8);
  p.p95 = quantile(0.95);
  p.above_0_3 = above_03 / n;
  p.above_0_67 = above_067 / n;
  return p;
}

double mixed_group_share(const RolloutBatch& batch) {
  const size_t G = static_cast<size_t>(std::max<int64_t>(batch.group_size, 1));
  const size_t groups = batch.items.size() / G;
  if (groups == 0) return 0.0;
  size_t mixed = 0;
  for (size_t g = 0; g < groups; ++g) {
    bool differs = false;
    for (size_t k = 1; k < G; ++k)
      differs |= batch.items[g * G + k].reward.total != batch.items[g * G].reward.total;
    mixed += differs ? 1 : 0;
  }
  return static_cast<double>(mixed) / static_cast<double>(groups);
}

namespace {

// The policy's gradient, every parameter flattened in registration order.
std::vector<float> flat_gradient(const model::Transformer& policy) {
  std::vector<float> g;
  for (const optim::Parameter& p : policy.parameters()) {
    const Tensor grad = p.tensor.grad();
    const std::vector<float> part =
        grad.defined() ? grad.to_vector() : std::vector<float>(p.tensor.numel(), 0.0f);
    g.insert(g.end(), part.begin(), part.end());
  }
  return g;
}

double norm(const std::vector<float>& a) {
  double s = 0.0;
  for (float v : a) s += static_cast<double>(v) * v;
  return std::sqrt(s);
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double dot = 0.0;
  for (size_t i = 0; i < a.size(); ++i) dot += static_cast<double>(a[i]) * b[i];
  const double n = norm(a) * norm(b);
  return n > 0.0 ? dot / n : std::numeric_limits<double>::quiet_NaN();
}

struct Gradient {
  std::vector<float> flat;
  MethodProbe probe;
};

// METHOD's advantages and policy gradient on BATCH (sampled at step STEP with SAMPLING).
Gradient method_gradient(model::Transformer& policy, const RolloutBatch& batch, const RunConfig& config,
                         const model::SamplingOptions& sampling, const ProbeMethod& method, int64_t step) {
  const Grouping groups = batch.groups();
  BatchContext context = advantage_context(config, batch, groups, step);
  context.groups_filtered = false;  // every group was kept: the method's own dynamic sampling decides
  const AdvantageResult adv = compute_advantages(batch.responses, method.rl, context);
  const UpdateOptions options = update_options(config, sampling, static_cast<float>(config.optim.lr), step);
  const UpdateStats stats = policy_gradient(policy, batch, adv, method.rl, options);
  Gradient g;
  g.flat = flat_gradient(policy);
  policy.parameters().zero_grad();
  g.probe.label = method.label;
  g.probe.loss_tokens = stats.tokens;
  const Diagnostics& d = adv.diagnostics;
  g.probe.kept_groups = d.groups > 0 ? 1.0 - d.dropped_group_fraction : 0.0;
  g.probe.grad_norm = norm(g.flat);
  return g;
}

}  // namespace

ProbeResult run_probe(model::Transformer& policy, const data::Tokenizer& tokenizer,
                      const ProblemSource& source, const RunConfig& config,
                      const std::vector<ProbeMethod>& methods) {
  GTPO_CHECK(!methods.empty(), "probe: no method to probe");
  const model::SamplingOptions sampling = sampling_options(config.sampler, tokenizer, config.train.seed);
  RlConfig every_group = config.rl;
  every_group.dynamic_sampling = false;
  RewardRunner rewards(config.reward, config.sampler);
  uint64_t cursor = 0;
  const auto collect = [&](int64_t step) {
    return collect_rollouts(policy, tokenizer, source, cursor, config.train.prompts_per_step, sampling,
                            every_group, &rewards, step);
  };
  const RolloutBatch first = collect(1), second = collect(2);
  ProbeResult r;
  r.group_size = first.group_size;
  r.groups = first.group_size > 0 ? static_cast<int64_t>(first.items.size()) / first.group_size : 0;
  r.temperature = sampling.temperature;
  r.accuracy = first.sampled_responses > 0
                   ? static_cast<double>(first.sampled_correct) / static_cast<double>(first.sampled_responses)
                   : 0.0;
  r.entropy = entropy_profile(first.responses);
  r.mixed_groups = mixed_group_share(first);
  const Gradient baseline = method_gradient(policy, first, config, sampling, methods[0], 1);
  r.noise_floor =
      cosine(baseline.flat, method_gradient(policy, second, config, sampling, methods[0], 2).flat);
  r.methods.push_back(baseline.probe);
  r.methods[0].cosine = cosine(baseline.flat, baseline.flat);
  for (size_t m = 1; m < methods.size(); ++m) {
    Gradient g = method_gradient(policy, first, config, sampling, methods[m], 1);
    g.probe.cosine = cosine(baseline.flat, g.flat);
    r.methods.push_back(g.probe);
  }
  return r;
}

namespace {
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }
}  // namespace

nlohmann::json probe_json(const ProbeResult& r) {
  const EntropyProfile& e = r.entropy;
  nlohmann::json methods = nlohmann::json::array();
  for (const MethodProbe& m : r.methods)
    methods.push_back({{"method", m.label},
                       {"loss_tokens", m.loss_tokens},
                       {"kept_groups", m.kept_groups},
                       {"grad_norm", m.grad_norm},
                       {"cosine", number_or_null(m.cosine)}});
  return {{"groups", r.groups},
          {"group_size", r.group_size},
          {"temperature", r.temperature},
          {"accuracy", r.accuracy},
          {"entropy",
           {{"tokens", e.tokens},
            {"mean", e.mean},
            {"p50", e.p50},
            {"p80", e.p80},
            {"p95", e.p95},
            {"above_0_3", e.above_0_3},
            {"above_0_67", e.above_0_67}}},
          {"mixed_groups", r.mixed_groups},
          {"baseline", r.methods.empty() ? "" : r.methods[0].label},
          {"methods", methods},
          {"noise_floor", number_or_null(r.noise_floor)}};
}

std::string probe_table(const ProbeResult& r) {
  const EntropyProfile& e = r.entropy;
  char buf[512];
  std::string out;
  std::snprintf(buf, sizeof buf, "probe: %lld groups x %lld at T %.2f, accuracy %.3f\n",
                static_cast<long long>(r.groups), static_cast<long long>(r.group_size), r.temperature,
                r.accuracy);
  out += buf;
  std::snprintf(
      buf, sizeof buf,
      "token entropy (nats, %lld tokens): mean %.4f | p50 %.4f | p80 %.4f | p95 %.4f | > 0.3: %.1f%% | "
      "> 0.67: %.1f%%\n",
      static_cast<long long>(e.tokens), e.mean, e.p50, e.p80, e.p95, 100 * e.above_0_3, 100 * e.above_0_67);
  out += buf;
  std::snprintf(buf, sizeof buf, "mixed groups: %.1f%%\n", 100 * r.mixed_groups);
  out += buf;
  const std::string base = r.methods.empty() ? "" : r.methods[0].label;
  std::snprintf(buf, sizeof buf, "%-44s %11s %11s %11s %11s\n", "method", "loss tokens", "kept groups",
                "grad norm", "cos base");
  out += buf;
  for (const MethodProbe& m : r.methods) {
    std::snprintf(buf, sizeof buf, "%-44s %11lld %10.1f%% %11.4g %11.6f\n", m.label.c_str(),
                  static_cast<long long>(m.loss_tokens), 100 * m.kept_groups, m.grad_norm, m.cosine);
    out += buf;
  }
  std::snprintf(
      buf, sizeof buf,
      "baseline: %s; noise floor (its cosine with itself on an independent batch): %.4f\n"
      "a method above the floor moves the policy more like the baseline than two of its batches do\n",
      base.c_str(), r.noise_floor);
  out += buf;
  return out;
}

}  // namespace gtpo::rl
