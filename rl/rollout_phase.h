// The rollout phase of one RL step: sample prompts from the data cursor, generate G responses each,
// verify and score them (rl/reward.h), and (with dynamic sampling) keep only groups that mix correct and incorrect responses,
// sampling more prompts until the step is full or rl.max_resample_rounds is reached.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "model/sampler.h"
#include "rl/math/grouping.h"
#include "rl/math/rl_config.h"
#include "rl/math/rollout.h"
#include "rl/problem_source.h"
#include "rl/reward.h"
#include "runtime/dist/communicator.h"

namespace gtpo::rl {

struct SamplerSection;  // rl/run_config.h

struct RolloutItem {
  uint64_t problem_index = 0;  // train-split index: the group key and the sampler's prompt id
  data::Problem problem;
  model::Sample sample;        // tokens and old log-probs; its entropies moved to the Response
  std::string completion;      // decoded response text, without the end-of-sequence token
  data::Verdict verdict;
  bool truncated = false;
  RewardOutcome reward;        // r_i, c_i and every reward function's score (rl/reward.h)
  // With a teacher (rl/distillation.h), per completion token: its log-prob under the teacher and the
  // teacher's most likely token there. Empty without one.
  std::vector<float> teacher_logprobs;
  std::vector<int32_t> teacher_argmax;
};

struct RolloutBatch {
  std::vector<RolloutItem> items;  // group-major: G consecutive items per kept prompt
  // The host view the advantage math consumes, one per item (same order), built once at collection:
  // correctness, truncation, |o_i| and the sampler's entropies (moved, not copied).
  std::vector<Response> responses;
  int64_t group_size = 0;
  int64_t sampled_groups = 0;      // over all rounds
  int64_t kept_groups = 0;
  int64_t rounds = 0;
  int64_t sampled_responses = 0;   // over all rounds, kept or not
  int64_t sampled_correct = 0;
  model::SamplerStats sampler;
  double seconds_rewards = 0.0;    // in the reward functions (built-in and external), over all rounds
  std::vector<RewardOutcome> sampled_rewards;  // every sampled response's, kept or not (the rewards/ metrics)
  // The first groups dynamic sampling dropped (at most as many as the step keeps), group-major, for the
  // logs: a step that drops everything still shows what the model wrote. Never trained on.
  std::vector<RolloutItem> dropped_items;

  // The groups by construction: G consecutive responses per kept prompt, keyed by problem index.
  Grouping groups() const;
};

class RewardRunner;  // rl/reward_runner.h

// Advances `cursor` past every prompt it samples. REWARDS scores each round's completions (all of the
// round's at once; STEP goes into external rewards' requests); without it the reward is the verifier's
// 0/1. A RewardError from it propagates before anything of the round is kept.
// With several ranks (COMM), each rank samples, verifies and scores a contiguous share of every round's
// prompts and the round is gathered, so every rank returns the batch one process would (dynamic sampling's
// kept count and refill decided on the whole round).
RolloutBatch collect_rollouts(const model::Transformer& policy, const data::Tokenizer& tokenizer,
                              const ProblemSource& source, uint64_t& cursor, int64_t prompts,
                              const model::SamplingOptions& sampling, const RlConfig& rl,
                              RewardRunner* rewards = nullptr, int64_t step = 0,
                              dist::Communicator& comm = dist::single_process());

// Generation options a tokenizer implies (end-of-sequence, padding, decoding for stop strings).
void attach_tokenizer(model::SamplingOptions& sampling, const data::Tokenizer& tokenizer);
// The sampler section as sampling options for TOKENIZER, seeded with SEED.
model::SamplingOptions sampling_options(const SamplerSection& sampler, const data::Tokenizer& tokenizer,
                                        uint64_t seed);
// Response text without a trailing end-of-sequence token.
// A sample that ended at an end-of-sequence id (any of them) loses that last token.
std::string decode_completion(const data::Tokenizer& tokenizer, const model::Sample& sample);

}  // namespace gtpo::rl
