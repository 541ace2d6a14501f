#include <omp.h>

#include <catch2/catch.hpp>

#include "model/sampler.h"
#include "runtime/ops.h"
#include "tests/support/random.h"

using namespace gtpo;
using namespace gtpo::model;

namespace {
ModelConfig tiny_config(Architecture arch) {
  ModelConfig c;
  c.architecture = arch;
  c.vocab_size = 23;
  c.hidden_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = arch == Architecture::gpt2 ? 4 : 2;
  c.intermediate_size = 40;
  c.max_position_embeddings = 64;
  c.norm_eps = 1e-5f;
  c.tie_word_embeddings = arch == Architecture::gpt2;
  c.attention_bias = arch == Architecture::qwen2;
  return c;
}

Transformer make_model(Architecture arch, uint64_t seed) {
  Transformer m(tiny_config(arch));
  m.init_weights(seed);
  // Sharper than the default 0.02 init, so that greedy choices are well separated.
  NoGradGuard guard;
  for (const optim::Parameter& p : m.parameters())
    if (p.tensor.rank() == 2) p.tensor.copy_(ops::mul_scalar(p.tensor, 25.0f));
  return m;
}

std::vector<PromptInput> prompts() {
  return {{0, {1, 5, 7}}, {1, {2, 3, 4, 9, 11, 13}}, {2, {8}}};
}

// Full-forward log-probs and entropies of generated tokens, the way `gtpo score` computes them.
void score(const Transformer& m, const Sample& s, float temperature, std::vector<float>& lp, std::vector<float>& ent) {
  std::vector<int32_t> seq = s.prompt_tokens;
  seq.insert(seq.end(), s.tokens.begin(), s.tokens.end());
  const int64_t T = static_cast<int64_t>(seq.size()), k = static_cast<int64_t>(s.prompt_tokens.size());
  NoGradGuard guard;
  Tensor logits = m.forward(Tensor::from_ints(seq, {1, T}));
  const int64_t V = m.config().vocab_size;
  Tensor rows = ops::reshape(ops::slice(logits, 1, k - 1, T - 1), {T - k, V});
  std::vector<int32_t> targets(seq.begin() + k, seq.end());
  auto out = ops::token_logprob_entropy(rows, Tensor::from_ints(targets, {T - k}), temperature);
  lp = out.logprob.to_vector();
  ent = out.entropy.to_vector();
}
}  // namespace

TEST_CASE("sampler: greedy decoding with the KV cache equals repeated full forwards", "[model][sampler]") {
  for (Architecture arch : {Architecture::gpt2, Architecture::llama, Architecture::qwen2}) {
    INFO(architecture_name(arch));
    Transformer m = make_model(arch, 3);
    SamplingOptions o;
    o.temperature = 0.0f;
    o.max_new_tokens = 12;
    o.group_size = 2;
    std::vector<Sample> samples = sample_groups(m, prompts(), o);
    REQUIRE(samples.size() == 6);
    NoGradGuard guard;
    for (const Sample& s : samples) {
      std::vector<int32_t> seq = s.prompt_tokens;
      for (size_t i = 0; i < s.tokens.size(); ++i) {
        const int64_t T = static_cast<int64_t>(seq.size());
        std::vector<float> logits = m.forward(Tensor::from_ints(seq, {1, T})).to_vector();
        const float* last = logits.data() + (T - 1) * m.config().vocab_size;
        int32_t best = 0;
        for (int32_t v = 1; v < m.config().vocab_size; ++v)
          if (last[v] > last[best]) best = v;
        REQUIRE(s.tokens[i] == best);
        seq.push_back(best);
      }
    }
  }
}

TEST_CASE("sampler: log-probs and entropies equal the scoring forward within 1e-5", "[model][sampler]") {
  for (Architecture arch : {Architecture::gpt2, Architecture::llama}) {
    for (float temperature : {1.0f, 0.7f}) {
      INFO(architecture_name(arch) << " temperature " << temperature);
      Transformer m = make_model(arch, 5);
      SamplingOptions o;
      o.temperature = temperature;
      o.group_size = 3;
      o.max_new_tokens = 10;
      o.seed = 42;
      for (const Sample& s : sample_groups(m, prompts(), o)) {
        std::vector<float> lp, ent;
        score(m, s, temperature, lp, ent);
        REQUIRE(lp.size() == s.logprobs.size());
        for (size_t i = 0; i < lp.size(); ++i) {
          CHECK(std::abs(lp[i] - s.logprobs[i]) < 1e-5);
          CHECK(std::abs(ent[i] - s.entropies[i]) < 1e-5);
        }
      }
    }
  }
}

TEST_CASE("sampler: same seed gives the same samples, whatever the batch and thread count", "[model][sampler][determinism]") {
  Transformer m = make_model(Architecture::llama, 9);
  SamplingOptions o;
  o.group_size = 4;
  o.max_new_tokens = 8;
  o.seed = 7;
  o.top_k = 10;
  o.top_p = 0.9f;
  o.eos_id = 3;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<Sample> one = sample_groups(m, prompts(), o);
  omp_set_num_threads(2);
  std::vector<Sample> two = sample_groups(m, prompts(), o);
  omp_set_num_threads(threads);
  // Prompt 1 alone, in a batch of its own: its samples must not change.
  std::vector<Sample> alone = sample_groups(m, {prompts()[1]}, o);
  REQUIRE(one.size() == two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    CHECK(one[i].tokens == two[i].tokens);
    CHECK(one[i].logprobs == two[i].logprobs);
    CHECK(one[i].entropies == two[i].entropies);
  }
  for (size_t g = 0; g < 4; ++g) {
    CHECK(alone[g].tokens == one[4 + g].tokens);
    for (size_t i = 0; i < alone[g].logprobs.size(); ++i) CHECK(std::abs(alone[g].logprobs[i] - one[4 + g].logprobs[i]) < 1e-5);
  }
  o.seed = 8;
  std::vector<Sample> other = sample_groups(m, prompts(), o);
  bool any_different = false;
  for (size_t i = 0; i < one.size(); ++i) any_different = any_different || other[i].tokens != one[i].tokens;
  CHECK(any_different);
}

TEST_CASE("sampler: finished rows leaving the decode batch change no sample, bit for bit",
          "[model][sampler][determinism]") {
  // The rows still decoding run as a smaller batch over the whole cache (cache rows by index, shared prompt
  // prefixes included); every row's arithmetic is its own, so the samples must equal the run that feeds
  // finished rows a pad every step.
  for (Architecture arch : {Architecture::llama, Architecture::gpt2, Architecture::qwen2}) {
    INFO(architecture_name(arch));
    Transformer m = make_model(arch, 13);
    SamplingOptions o;
    o.group_size = 4;
    o.max_new_tokens = 10;
    o.seed = 5;
    o.temperature = 1.5f;
    o.eos_id = 2;
    o.drop_finished_rows = false;
    const std::vector<Sample> every_row = sample_groups(m, prompts(), o);
    o.drop_finished_rows = true;
    const std::vector<Sample> live_rows = sample_groups(m, prompts(), o);
    REQUIRE(every_row.size() == live_rows.size());
    size_t shortest = o.max_new_tokens, longest = 0;
    for (size_t i = 0; i < every_row.size(); ++i) {
      CHECK(live_rows[i].tokens == every_row[i].tokens);
      CHECK(live_rows[i].logprobs == every_row[i].logprobs);
      CHECK(live_rows[i].entropies == every_row[i].entropies);
      CHECK(live_rows[i].finish == every_row[i].finish);
      shortest = std::min(shortest, every_row[i].tokens.size());
      longest = std::max(longest, every_row[i].tokens.size());
    }
    CHECK(shortest + 2 < longest);  // rows did finish at different steps, so the batch shrank
  }
}

TEST_CASE("forward_cached: bad cache rows are errors", "[model][sampler][errors]") {
  Transformer m = make_model(Architecture::llama, 3);
  NoGradGuard guard;
  KvCache cache = KvCache::allocate(m.config(), 4, 8, Device::cpu);
  const Tensor tokens = Tensor::from_ints({1, 2}, {2, 1}), positions = Tensor::from_ints({0, 0}, {2, 1});
  const Tensor mask = Tensor::from_ints({1, 1}, {2, 1});
  CHECK_THROWS_WITH(m.forward_cached(tokens, positions, mask, cache, true, Tensor::from_ints({1, 4}, {2})),
                    Catch::Contains("forward_cached: cache row 4 is outside the cache's 4 rows or named twice"));
  CHECK_THROWS_WITH(m.forward_cached(tokens, positions, mask, cache, true, Tensor::from_ints({3, 3}, {2})),
                    Catch::Contains("cache row 3 is outside the cache's 4 rows or named twice"));
  CHECK_THROWS_WITH(m.forward_cached(tokens, positions, mask, cache, true, Tensor::from_ints({0, 1, 2}, {3})),
                    Catch::Contains("cache_rows must be i32 [2] (one per row of tokens)"));
  // Rows 3 and 1 of the cache, then the same tokens as a full batch: the same logits for those rows.
  const Tensor some = m.forward_cached(tokens, positions, mask, cache, true, Tensor::from_ints({3, 1}, {2}));
  KvCache full = KvCache::allocate(m.config(), 4, 8, Device::cpu);
  const Tensor all = m.forward_cached(Tensor::from_ints({9, 2, 9, 1}, {4, 1}), Tensor::from_ints({0, 0, 0, 0}, {4, 1}),
                                      Tensor::from_ints({1, 1, 1, 1}, {4, 1}), full, true);
  const int64_t V = m.config().vocab_size;
  const std::vector<float> s = some.to_vector(), a = all.to_vector();
  CHECK(std::vector<float>(s.begin(), s.begin() + V) == std::vector<float>(a.begin() + 3 * V, a.begin() + 4 * V));
  CHECK(std::vector<float>(s.begin() + V, s.end()) == std::vector<float>(a.begin() + V, a.begin() + 2 * V));
}

TEST_CASE("sampler: eos, stop strings and length end samples", "[model][sampler]") {
  Transformer m = make_model(Architecture::gpt2, 11);
  SamplingOptions o;
  o.group_size = 8;
  o.max_new_tokens = 6;
  o.seed = 1;
  o.eos_id = 4;
  for (const Sample& s : sample_groups(m, prompts(), o)) {
    if (s.finish == FinishReason::eos) {
      CHECK(s.tokens.back() == 4);
    } else {
      CHECK(s.finish == FinishReason::length);
      CHECK(s.tokens.size() == 6);
    }
    CHECK(s.logprobs.size() == s.tokens.size());
  }
  o.eos_id = -1;
  o.stop_strings = {"b"};
  o.decode = [](const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += static_cast<char>('a' + id);
    return s;
  };
  for (const Sample& s : sample_groups(m, prompts(), o))
    if (s.finish == FinishReason::stop) CHECK(s.tokens.back() == 1);
}

TEST_CASE("sampler: ids past sampleable_ids are never chosen, and log-probs stay the full distribution's",
          "[model][sampler]") {
  // A model with more embedding rows than its tokenizer has entries (Qwen2.5's 151,936 against 151,665).
  for (float temperature : {0.0f, 1.0f, 3.0f}) {
    INFO("temperature " << temperature);
    Transformer m = make_model(Architecture::llama, 4);
    SamplingOptions o;
    o.group_size = 16;
    o.max_new_tokens = 12;
    o.temperature = temperature;
    const std::vector<Sample> all = sample_groups(m, prompts(), o);
    o.sampleable_ids = 6;
    const std::vector<Sample> limited = sample_groups(m, prompts(), o);
    int64_t beyond = 0;
    for (const Sample& s : all)
      for (int32_t t : s.tokens) beyond += t >= 6;
    CHECK(beyond > 0);  // without the limit, ids past it are sampled
    for (const Sample& s : limited) {
      for (int32_t t : s.tokens) CHECK(t < 6);
      std::vector<float> lp, ent;
      score(m, s, temperature > 0.0f ? temperature : 1.0f, lp, ent);
      for (size_t i = 0; i < lp.size(); ++i) {
        CHECK(s.logprobs[i] == Approx(lp[i]).margin(1e-5));
        CHECK(s.entropies[i] == Approx(ent[i]).margin(1e-5));
      }
    }
  }
  Transformer m = make_model(Architecture::gpt2, 1);
  SamplingOptions o;
  o.sampleable_ids = 24;
  CHECK_THROWS_WITH(sample_groups(m, {{0, {1}}}, o),
                    Catch::Contains("sampleable ids [0, 24)") && Catch::Contains("model's vocabulary of 23"));
}

TEST_CASE("sampler: bad options and prompts are errors", "[model][sampler][errors]") {
  Transformer m = make_model(Architecture::gpt2, 1);
  SamplingOptions o;
  CHECK_THROWS_WITH(sample_groups(m, {{0, {1, 99}}}, o), Catch::Contains("token id 99 outside [0, 23)"));
  CHECK_THROWS_WITH(sample_groups(m, {{0, {}}}, o), Catch::Contains("prompt 0 is empty"));
  o.max_new_tokens = 100;
  CHECK_THROWS_WITH(sample_groups(m, {{0, {1}}}, o), Catch::Contains("exceeds max_position_embeddings 64"));
  o.max_new_tokens = 4;
  o.top_p = 0.0f;
  CHECK_THROWS_WITH(sample_groups(m, {{0, {1}}}, o), Catch::Contains("top_p must be in (0, 1]"));
}
