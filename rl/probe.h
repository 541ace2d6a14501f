// gtpo probe: can any budget separate these methods here? From one policy and one run config: the token
// entropy the sampler sees, the share of groups whose rewards mix, and each method's policy gradient on
// the same rollouts beside a baseline's (their cosine), against the noise floor: the cosine between the
// baseline's gradients on two independent batches. A method whose cosine with the baseline is above that
// floor moves the policy more like the baseline than two of the baseline's own batches move it alike.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "model/transformer.h"
#include "rl/math/rollout.h"
#include "rl/problem_source.h"
#include "rl/rollout_phase.h"
#include "rl/run_config.h"

namespace gtpo::rl {

struct ProbeMethod {
  std::string label;  // as asked for: "dapo_forking:dapo_forking.norm=kept"
  RlConfig rl;        // its rl.* and algorithm settings; the other sections are the run config's
};

// Token entropies H_{i,t} of the sampled responses, in nats at the sampling temperature. Quantiles are the
// nearest rank (the smallest value with at least q of the tokens at or below it).
struct EntropyProfile {
  int64_t tokens = 0;
  double mean = 0.0, p50 = 0.0, p80 = 0.0, p95 = 0.0;
  double above_0_3 = 0.0, above_0_67 = 0.0;  // shares of the tokens with H > 0.3 and H > 0.67
};
EntropyProfile entropy_profile(const std::vector<Response>& responses);

// The share of BATCH's groups (G consecutive items) whose rewards r_i are not all equal: the groups a
// group-normalised advantage can learn from.
double mixed_group_share(const RolloutBatch& batch);

struct MethodProbe {
  std::string label;
  int64_t loss_tokens = 0;   // tokens with a nonzero loss weight
  double kept_groups = 0.0;  // share of the groups its dynamic sampling keeps (1 without)
  double grad_norm = 0.0;    // of its policy gradient, before clipping
  double cosine = 0.0;       // with the baseline's gradient on the same rollouts; NaN where a norm is 0
};

struct ProbeResult {
  int64_t groups = 0, group_size = 0;
  float temperature = 1.0f;
  double accuracy = 0.0;  // c_i over the first batch's responses
  EntropyProfile entropy;
  double mixed_groups = 0.0;
  std::vector<MethodProbe> methods;  // the baseline (the first method asked for) first
  double noise_floor = 0.0;  // cosine of the baseline's gradients on the first and an independent batch
};

// Samples train.prompts_per_step prompts × sampler.group_size with POLICY at the config's sampler settings
// (every group kept: each method's own dynamic sampling then drops what it drops) and a second, independent
// batch of the same size from the next prompts, scores both with the config's reward functions, and
// computes every method's gradient on the first batch and the baseline's on both. The policy's weights are
// not changed; its gradients are left zeroed.
ProbeResult run_probe(model::Transformer& policy, const data::Tokenizer& tokenizer,
                      const ProblemSource& source, const RunConfig& config,
                      const std::vector<ProbeMethod>& methods);

// The result as JSON (docs/probe.md names the fields; a NaN cosine is null) and as a table for the console.
nlohmann::json probe_json(const ProbeResult& result);
std::string probe_table(const ProbeResult& result);

}  // namespace gtpo::rl
