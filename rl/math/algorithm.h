// The interface every advantage algorithm implements. To add one: write rl/math/algorithms/NAME.cpp with a
// function returning an Algorithm, declare it in rl/math/algorithms/all.h and list it in
// algorithm_registry.cpp. An algorithm's own settings are schema rows of its own section (NAME.key), declared
// in its file (Algorithm::keys); the config parser, the resolved config.yaml and docs/configuration.md pick
// them up.
#pragma once
#include <cstdint>
#include <vector>

#include "rl/math/rl_config.h"
#include "rl/math/rollout.h"

namespace gtpo::rl {

struct AlgorithmInput {
  const std::vector<Response>& batch;
  // Groups that survived dynamic sampling; each lists response indices in input order.
  const std::vector<std::vector<int>>& groups;
  // Overlong penalty of every response (0 where none), already resolved from rl.overlong.
  const std::vector<double>& penalty;
  const RlConfig& cfg;
  uint64_t seed = 0;  // of the step (BatchContext::seed), for an algorithm's random choices
};

// Writes shaped, advantages and seq_advantage of every response of input.groups into result.responses
// (pre-sized by the driver: advantages hold |o_i| zeros, loss_mask is set). It may narrow loss_mask.
using ComputeFn = void (*)(const AlgorithmInput& input, AdvantageResult& result);

// Written with designated initializers (Algorithm{.name = ..., ...}); a field left out keeps its default.
struct Algorithm {
  const char* name = "";
  const char* summary = "";                   // one line for --help
  void (*set_defaults)(RlConfig&) = nullptr;  // applied on top of RlConfig{} by defaults_for()
  ComputeFn compute = nullptr;
  bool needs_entropies = false;      // the math reads H; responses must carry |o_i| entropies
  bool token_level_shaping = false;  // shaped holds one reward per token
  // Non-null: the policy loss is the sequence loss (rl/math/losses/sequence.cpp) over seq_advantage, with
  // this mean of the token ratios as each response's ratio; nullptr: the token loss rl.policy_loss names.
  MeanKind (*sequence_ratio)(const RlConfig&) = nullptr;
  // Whether reward functions enter only through c_i, never through r_i's value (gtpo, grpo_s unless their
  // outcome key says reward); nullptr = never.
  bool (*outcome_from_correctness)(const RlConfig&) = nullptr;
  std::vector<RlKey> (*keys)() = nullptr;  // the rows of the algorithm's own section; nullptr = none
};

}  // namespace gtpo::rl
