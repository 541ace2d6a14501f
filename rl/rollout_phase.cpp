#include "rl/rollout_phase.h"
#include "rl/reward_runner.h"
#include "rl/run_config_schema.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include "runtime/error.h"

namespace gtpo::rl {

void attach_tokenizer(model::SamplingOptions& sampling, const data::Tokenizer& tokenizer) {
  sampling.eos_id = tokenizer.eos_id();
  sampling.pad_id = tokenizer.pad_id() >= 0 ? tokenizer.pad_id() : 0;
  const data::Tokenizer* tok = &tokenizer;
  sampling.decode = [tok](const std::vector<int32_t>& ids) { return tok->decode(ids); };
}

std::string decode_completion(const data::Tokenizer& tokenizer, const std::vector<int32_t>& tokens) {
  std::vector<int32_t> body = tokens;
  if (!body.empty() && body.back() == tokenizer.eos_id()) body.pop_back();
  return tokenizer.decode(body);
}

Grouping RolloutBatch::groups() const {
  Grouping g;
  const int64_t G = std::max<int64_t>(group_size, 1);
  for (std::size_t first = 0; first < items.size(); first += static_cast<std::size_t>(G)) {
    g.ids.push_back(std::to_string(items[first].problem_index));
    std::vector<int>& members = g.members.emplace_back();
    for (std::size_t i = first; i < std::min(items.size(), first + static_cast<std::size_t>(G)); ++i)
      members.push_back(static_cast<int>(i));
  }
  return g;
}

RolloutBatch collect_rollouts(const model::Transformer& policy, const data::Tokenizer& tokenizer,
                              const ProblemSource& source, uint64_t& cursor, int64_t prompts,
                              const model::SamplingOptions& sampling, const RlConfig& rl, RewardRunner* rewards,
                              int64_t step) {
  GTPO_CHECK(prompts > 0, "rollouts: prompts per step must be positive");
  RolloutBatch batch;
  batch.group_size = sampling.group_size;
  const int64_t G = sampling.group_size;
  const int64_t max_rounds = rl.dynamic_sampling ? std::max(1, rl.max_resample_rounds + 1) : 1;
  const std::vector<RewardFunctionConfig> verifier_only = reward_functions(RewardSection{});
  while (batch.kept_groups < prompts && batch.rounds < max_rounds) {
    const int64_t wanted = prompts - batch.kept_groups;
    std::vector<model::PromptInput> inputs;
    std::vector<data::Problem> problems;
    std::vector<uint64_t> indices;
    for (int64_t p = 0; p < wanted; ++p) {
      const uint64_t index = cursor++;
      problems.push_back(source.train(index));
      indices.push_back(index);
      inputs.push_back({index, tokenizer.encode(problems.back().prompt)});
    }
    std::vector<model::Sample> samples = model::sample_groups(policy, inputs, sampling, &batch.sampler);
    batch.rounds++;
    std::vector<RolloutItem> round;
    round.reserve(static_cast<size_t>(wanted * G));
    for (int64_t p = 0; p < wanted; ++p)
      for (int64_t g = 0; g < G; ++g) {
        RolloutItem it;
        it.problem_index = indices[static_cast<size_t>(p)];
        it.problem = problems[static_cast<size_t>(p)];
        it.sample = std::move(samples[static_cast<size_t>(p * G + g)]);
        it.truncated = it.sample.finish == model::FinishReason::length;
        it.completion = decode_completion(tokenizer, it.sample.tokens);
        it.verdict = source.check(it.problem, it.completion);
        if (it.truncated) it.verdict.correct = false;  // spec: a truncated response is incorrect
        round.push_back(std::move(it));
      }
    // Every completion of the round is scored before any group is judged or kept.
    if (rewards != nullptr) {
      const auto t = std::chrono::steady_clock::now();
      std::vector<RolloutItem*> pointers;
      for (RolloutItem& it : round) pointers.push_back(&it);
      rewards->score(pointers, step);
      batch.seconds_rewards += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    } else {
      for (RolloutItem& it : round)
        it.reward = combine_scores(verifier_only, {builtin_reward("correct", it.verdict, 0, 1)},
                                   RewardSection{}.correct_threshold, it.truncated);
    }
    for (const RolloutItem& it : round) batch.sampled_rewards.push_back(it.reward);
    const bool continuous = rewards != nullptr && rewards->continuous();
    for (int64_t p = 0; p < wanted; ++p) {
      const auto first = round.begin() + p * G;
      int correct = 0;
      for (auto it = first; it != first + G; ++it) correct += it->reward.correct ? 1 : 0;
      batch.sampled_groups++;
      batch.sampled_responses += G;
      batch.sampled_correct += correct;
      const bool informative = correct > 0 && correct < G;
      // Without dynamic sampling every group is kept; the advantage math then gives uniform groups zero
      // advantage (grpo) or drops them itself.
      if (rl.dynamic_sampling && !informative) continue;
      for (auto it = first; it != first + G; ++it) {
        Response r;
        r.correct = it->reward.correct;
        r.truncated = it->truncated;
        r.length = static_cast<int>(it->sample.tokens.size());
        r.entropies = std::move(it->sample.entropies);
        if (continuous) r.reward = it->reward.total;
        batch.responses.push_back(std::move(r));
        batch.items.push_back(std::move(*it));
      }
      batch.kept_groups++;
    }
  }
  return batch;
}

// The sampler section: read by sampling_options below.
std::vector<RunKey> schema::sampler_keys() {
  using config::field;
  const double inf = std::numeric_limits<double>::infinity();
  return {
      field("sampler", "group_size", &RunConfig::sampler, &SamplerSection::group_size, config::integer<int64_t>(2, 1 << 16),
            "G: responses sampled per prompt"),
      field("sampler", "temperature", &RunConfig::sampler, &SamplerSection::temperature, config::number(0, inf),
            "sampling temperature; 0 = greedy"),
      field("sampler", "top_k", &RunConfig::sampler, &SamplerSection::top_k, config::integer<int64_t>(0),
            "sample among the k most likely tokens; 0 = off"),
      field("sampler", "top_p", &RunConfig::sampler, &SamplerSection::top_p, config::number(0, 1, true),
            "nucleus sampling mass; 1 = off"),
      field("sampler", "max_new_tokens", &RunConfig::sampler, &SamplerSection::max_new_tokens,
            config::integer<int64_t>(1, std::numeric_limits<int>::max()),
            "L_max: response length limit in tokens (a truncated response is incorrect)"),
  };
}

model::SamplingOptions sampling_options(const SamplerSection& s, const data::Tokenizer& tokenizer, uint64_t seed) {
  model::SamplingOptions o;
  o.group_size = s.group_size;
  o.temperature = static_cast<float>(s.temperature);
  o.top_k = s.top_k;
  o.top_p = static_cast<float>(s.top_p);
  o.max_new_tokens = s.max_new_tokens;
  o.seed = seed;
  attach_tokenizer(o, tokenizer);
  return o;
}

}  // namespace gtpo::rl
