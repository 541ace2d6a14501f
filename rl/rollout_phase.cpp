#include "rl/rollout_phase.h"
#include "data/prompt_tokens.h"
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
  sampling.sampleable_ids = tokenizer.vocab_size();  // never an id the tokenizer cannot decode
  const data::Tokenizer* tok = &tokenizer;
  sampling.decode = [tok](const std::vector<int32_t>& ids) { return tok->decode(ids); };
}

std::string decode_completion(const data::Tokenizer& tokenizer, const model::Sample& sample) {
  std::vector<int32_t> body = sample.tokens;
  if (!body.empty() && sample.finish == model::FinishReason::eos) body.pop_back();
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

namespace {

// One prompt group as the ranks exchange it: what the update, the metrics and samples.jsonl read.
void put_items(dist::ByteWriter& w, const std::vector<RolloutItem>& items) {
  w.put<uint64_t>(items.size());
  for (const RolloutItem& it : items) {
    w.put(it.problem_index);
    w.put(it.sample.prompt_id);
    w.put(it.sample.sample_index);
    w.put_vector(it.sample.prompt_tokens);
    w.put_vector(it.sample.tokens);
    w.put_vector(it.sample.logprobs);
    w.put_vector(it.sample.entropies);
    w.put(it.sample.finish);
    w.put_string(it.completion);
    w.put<uint8_t>(it.verdict.correct);
    w.put<uint8_t>(it.verdict.well_formed);
    w.put<uint8_t>(it.verdict.has_answer);
    w.put_string(it.verdict.extracted);
    w.put<uint8_t>(it.truncated);
    w.put(it.reward.total);
    w.put<uint8_t>(it.reward.correct);
    w.put<uint64_t>(it.reward.scores.size());
    for (const RewardScore& score : it.reward.scores) {
      w.put(score.value);
      w.put<uint8_t>(score.correct.has_value() ? (*score.correct ? 2 : 1) : 0);
      w.put<uint64_t>(score.components.size());
      for (const auto& [name, value] : score.components) {
        w.put_string(name);
        w.put(value);
      }
      w.put_vector(score.token_rewards);
    }
    w.put_vector(it.reward.token_rewards);
  }
}

void get_items(dist::ByteReader& r, const ProblemSource& source, std::vector<RolloutItem>& out) {
  const uint64_t n = r.get<uint64_t>();
  for (uint64_t i = 0; i < n; ++i) {
    RolloutItem& it = out.emplace_back();
    it.problem_index = r.get<uint64_t>();
    it.problem = source.train(it.problem_index);  // deterministic: cheaper to look up than to send
    it.sample.prompt_id = r.get<uint64_t>();
    it.sample.sample_index = r.get<int64_t>();
    it.sample.prompt_tokens = r.get_vector<int32_t>();
    it.sample.tokens = r.get_vector<int32_t>();
    it.sample.logprobs = r.get_vector<float>();
    it.sample.entropies = r.get_vector<float>();
    it.sample.finish = r.get<model::FinishReason>();
    it.completion = r.get_string();
    it.verdict.correct = r.get<uint8_t>();
    it.verdict.well_formed = r.get<uint8_t>();
    it.verdict.has_answer = r.get<uint8_t>();
    it.verdict.extracted = r.get_string();
    it.truncated = r.get<uint8_t>();
    it.reward.total = r.get<double>();
    it.reward.correct = r.get<uint8_t>();
    it.reward.scores.resize(r.get<uint64_t>());
    for (RewardScore& score : it.reward.scores) {
      score.value = r.get<double>();
      const uint8_t correct = r.get<uint8_t>();
      if (correct) score.correct = correct == 2;
      score.components.resize(r.get<uint64_t>());
      for (auto& [name, value] : score.components) {
        name = r.get_string();
        value = r.get<double>();
      }
      score.token_rewards = r.get_vector<double>();
    }
    it.reward.token_rewards = r.get_vector<double>();
  }
}

// Every rank's scored items of one round, in rank order, i.e. in prompt order; sampler counters summed.
std::vector<RolloutItem> gather_round(dist::Communicator& comm, const ProblemSource& source,
                                      std::vector<RolloutItem> mine, model::SamplerStats& stats) {
  if (comm.size() == 1) return mine;
  dist::ByteWriter w;
  w.put(stats);
  put_items(w, mine);
  std::vector<RolloutItem> all;
  model::SamplerStats total;
  for (const std::vector<uint8_t>& part : comm.allgather(w.bytes(), "rollouts")) {
    dist::ByteReader r(part);
    total += r.get<model::SamplerStats>();
    get_items(r, source, all);
  }
  stats = total;
  return all;
}

// This rank's share of a round: its prompts (problems cursor + share.first ...) sampled G times each and
// verified, in prompt order.
std::vector<RolloutItem> sample_share(const model::Transformer& policy, const data::Tokenizer& tokenizer,
                                      const ProblemSource& source, uint64_t cursor, const dist::Share& share,
                                      const model::SamplingOptions& sampling, model::SamplerStats& stats) {
  const int64_t G = sampling.group_size, mine = share.last - share.first;
  std::vector<model::PromptInput> inputs;
  std::vector<data::Problem> problems;
  std::vector<uint64_t> indices;
  for (int64_t p = 0; p < mine; ++p) {
    const uint64_t index = cursor + static_cast<uint64_t>(share.first + p);
    problems.push_back(source.train(index));
    indices.push_back(index);
    inputs.push_back({index, data::encode_prompt(tokenizer, problems.back())});
  }
  std::vector<model::Sample> samples;
  if (!inputs.empty())
    samples = model::sample_groups(policy, inputs, model::with_model_eos(sampling, policy), &stats);
  std::vector<RolloutItem> round;
  round.reserve(static_cast<size_t>(mine * G));
  for (int64_t p = 0; p < mine; ++p)
    for (int64_t g = 0; g < G; ++g) {
      RolloutItem it;
      it.problem_index = indices[static_cast<size_t>(p)];
      it.problem = problems[static_cast<size_t>(p)];
      it.sample = std::move(samples[static_cast<size_t>(p * G + g)]);
      it.truncated = it.sample.finish == model::FinishReason::length;
      it.completion = decode_completion(tokenizer, it.sample);
      it.verdict = source.check(it.problem, it.completion);
      if (it.truncated) it.verdict.correct = false;  // spec: a truncated response is incorrect
      round.push_back(std::move(it));
    }
  return round;
}

// Every completion of the round is scored before any group is judged or kept: by the run's reward
// functions, or by the verifier alone.
void score_round(std::vector<RolloutItem>& round, RewardRunner* rewards, int64_t step, RolloutBatch& batch,
                 const data::Tokenizer& tokenizer) {
  if (rewards != nullptr) {
    const auto t = std::chrono::steady_clock::now();
    std::vector<RolloutItem*> pointers;
    for (RolloutItem& it : round) pointers.push_back(&it);
    if (!pointers.empty()) rewards->score(pointers, step, tokenizer);  // a rank may have no prompt this round
    batch.seconds_rewards += std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    return;
  }
  const std::vector<RewardFunctionConfig> verifier_only = reward_functions(RewardSection{});
  for (RolloutItem& it : round)
    it.reward = combine_scores(verifier_only, {builtin_reward("correct", it.verdict, 0, 1)},
                               RewardSection{}.correct_threshold, it.truncated);
}

// Counts the round's groups and keeps them in the batch: every group, or with dynamic sampling only those
// with both correct and incorrect responses (the others go to dropped_items, up to a batch's worth).
void keep_groups(RolloutBatch& batch, std::vector<RolloutItem>& round, int64_t prompts, const RlConfig& rl,
                 bool continuous) {
  const int64_t G = batch.group_size, groups = static_cast<int64_t>(round.size()) / std::max<int64_t>(G, 1);
  for (int64_t p = 0; p < groups; ++p) {
    const auto first = round.begin() + p * G;
    int correct = 0;
    for (auto it = first; it != first + G; ++it) correct += it->reward.correct ? 1 : 0;
    batch.sampled_groups++;
    batch.sampled_responses += G;
    batch.sampled_correct += correct;
    const bool informative = correct > 0 && correct < G;
    // Without dynamic sampling every group is kept; the advantage math then gives uniform groups zero
    // advantage (grpo) or drops them itself.
    if (rl.dynamic_sampling && !informative) {
      if (static_cast<int64_t>(batch.dropped_items.size()) < prompts * G)
        batch.dropped_items.insert(batch.dropped_items.end(), std::make_move_iterator(first),
                                   std::make_move_iterator(first + G));
      continue;
    }
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

}  // namespace

RolloutBatch collect_rollouts(const model::Transformer& policy, const data::Tokenizer& tokenizer,
                              const ProblemSource& source, uint64_t& cursor, int64_t prompts,
                              const model::SamplingOptions& sampling, const RlConfig& rl, RewardRunner* rewards,
                              int64_t step, dist::Communicator& comm) {
  GTPO_CHECK(prompts > 0, "rollouts: prompts per step must be positive");
  RolloutBatch batch;
  batch.group_size = sampling.group_size;
  const int64_t max_rounds = rl.dynamic_sampling ? std::max(1, rl.max_resample_rounds + 1) : 1;
  while (batch.kept_groups < prompts && batch.rounds < max_rounds) {
    // Every rank advances the cursor past the whole round and samples, verifies and scores its contiguous
    // share of the round's prompts; the gather below gives every rank the round in prompt order, as one
    // process would see it, before any group is judged or kept.
    const int64_t wanted = prompts - batch.kept_groups;
    const dist::Share share = dist::share_of(wanted, comm.rank(), comm.size());
    const uint64_t round_start = cursor;
    cursor += static_cast<uint64_t>(wanted);
    model::SamplerStats round_stats;
    std::vector<RolloutItem> round =
        sample_share(policy, tokenizer, source, round_start, share, sampling, round_stats);
    batch.rounds++;
    score_round(round, rewards, step, batch, tokenizer);
    round = gather_round(comm, source, std::move(round), round_stats);
    batch.sampler.prefill_tokens += round_stats.prefill_tokens;
    batch.sampler.generated_tokens += round_stats.generated_tokens;
    batch.sampler.prefill_seconds += round_stats.prefill_seconds;
    batch.sampler.decode_seconds += round_stats.decode_seconds;
    batch.sampler.kv_cache_bytes = round_stats.kv_cache_bytes;  // the last round's, as the sampler reports it
    for (const RolloutItem& it : round) batch.sampled_rewards.push_back(it.reward);
    keep_groups(batch, round, prompts, rl, rewards != nullptr && rewards->continuous());
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
