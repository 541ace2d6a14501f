// Packed training batches (rl.share_prompts): the layout pack_shared_prompts builds, and that the
// transformer's forward over it gives the padded batch's logits bit for bit and its gradients up to
// summation order.
#include <catch2/catch.hpp>
#include <cmath>
#include <span>
#include <vector>

#include "model/transformer.h"
#include "rl/sequence_batch.h"
#include "runtime/ops.h"
#include "tests/support/determinism.h"
#include "tests/support/random.h"

using namespace gtpo;
using namespace gtpo::testing;
using Catch::Contains;

namespace {

using Tokens = std::vector<int32_t>;

std::vector<std::span<const int32_t>> spans(const std::vector<Tokens>& v) {
  return {v.begin(), v.end()};
}

model::ModelConfig tiny_config(model::Architecture arch) {
  model::ModelConfig c;
  c.architecture = arch;
  c.vocab_size = 29;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = arch == model::Architecture::gpt2 ? 4 : 2;
  c.intermediate_size = 48;
  c.max_position_embeddings = 160;
  c.norm_eps = 1e-5f;
  c.tie_word_embeddings = arch == model::Architecture::gpt2;
  c.attention_bias = arch == model::Architecture::qwen2;
  return c;
}

// Groups of responses to shared prompts, as a rollout batch holds them: three prompts of different
// lengths, each with responses of different lengths (one of a single token), and a second copy of the
// first prompt further on (it shares the first one's rows too).
void grouped_sequences(uint64_t seed, int64_t longest_response, std::vector<Tokens>& prompts,
                       std::vector<Tokens>& responses) {
  TestRng rng(seed);
  auto random_tokens = [&](int64_t n) {
    Tokens t;
    for (int64_t i = 0; i < n; ++i) t.push_back(rng.integer(1, 29));
    return t;
  };
  const std::vector<Tokens> distinct = {random_tokens(5), random_tokens(9), random_tokens(2)};
  for (size_t p = 0; p < distinct.size() + 1; ++p) {
    for (int g = 0; g < 4; ++g) {
      prompts.push_back(distinct[p % distinct.size()]);
      const int64_t n = g == 0 ? 1 : 1 + rng.integer(0, static_cast<int32_t>(longest_response));
      responses.push_back(random_tokens(n));
    }
  }
}

// Logits at the positions that predict each response token, sequence by sequence, from the padded forward
// (what rl.share_prompts=false computes): [M, V].
Tensor padded_logits(const model::Transformer& m, const std::vector<Tokens>& prompts,
                     const std::vector<Tokens>& responses) {
  std::vector<Tokens> seqs;
  for (size_t s = 0; s < prompts.size(); ++s) {
    Tokens seq = prompts[s];
    seq.insert(seq.end(), responses[s].begin(), responses[s].end());
    seqs.push_back(seq);
  }
  rl::PaddedBatch b = rl::pad_right(seqs, 0, Device::cpu);
  const int64_t V = m.config().vocab_size;
  Tensor flat = ops::reshape(m.forward(b.tokens), {b.rows * b.length, V});
  std::vector<int32_t> at;
  for (size_t s = 0; s < prompts.size(); ++s)
    for (size_t j = 0; j < responses[s].size(); ++j)
      at.push_back(static_cast<int32_t>(b.predicting(static_cast<int64_t>(s),
                                                     static_cast<int64_t>(prompts[s].size() + j))));
  return ops::gather_rows(flat, Tensor::from_ints(at, {static_cast<int64_t>(at.size())}));
}

// A scalar of the logits with fixed weights, so that both layouts' gradients can be compared.
Tensor weighted_sum(const Tensor& logits, uint64_t seed) {
  Tensor w = random_tensor(logits.shape(), seed);
  return ops::sum_all(ops::mul(logits, w));
}

std::vector<std::vector<float>> gradients(model::Transformer& m) {
  std::vector<std::vector<float>> g;
  for (const optim::Parameter& p : m.parameters()) g.push_back(p.tensor.grad().to_vector());
  m.parameters().zero_grad();
  return g;
}

}  // namespace

TEST_CASE("pack_shared_prompts: equal prompts share rows and a response's last token is not fed",
          "[rl][packed]") {
  const std::vector<Tokens> prompts = {{1, 2, 3}, {1, 2, 3}, {4, 5}};
  const std::vector<Tokens> responses = {{6, 7}, {8}, {9, 10, 11}};
  const rl::SharedPromptBatch b = rl::pack_shared_prompts(spans(prompts), spans(responses), Device::cpu);
  const model::PackedLayout& l = b.layout;
  // Rows: the first prompt (0-2), the first response's token 6 (3), the second prompt (4, 5), then 9 and 10;
  // 7, 8 and 11 end their responses and are only predicted.
  CHECK(l.tokens.to_int_vector() == std::vector<int32_t>{1, 2, 3, 6, 4, 5, 9, 10});
  CHECK(l.positions.to_int_vector() == std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3});
  CHECK(l.tokens.shape() == Shape{1, 8});
  CHECK(l.rows == 3);
  CHECK(l.length == 5);  // pad_right's: the longest prompt + response
  // Past a sequence's end the slot reads row 0 (any row would do: no real query sees it).
  CHECK(l.slot_rows.to_int_vector() == std::vector<int32_t>{0, 1, 2, 3, 0, /**/ 0, 1, 2, 0, 0, /**/ 4, 5, 6, 7, 0});
  CHECK(l.row_slots.to_int_vector() == std::vector<int32_t>{0, 1, 2, 3, 10, 11, 12, 13});
  CHECK(l.output_rows.to_int_vector() == std::vector<int32_t>{2, 3, /**/ 2, /**/ 5, 6, 7});
  // Attention is needed at the slots rows take their output from: a new prompt's and every fed response row.
  CHECK(l.query_range.to_int_vector() == std::vector<int32_t>{0, 4, /**/ 3, 3, /**/ 0, 4});
  CHECK(b.targets == std::vector<int32_t>{6, 7, 8, 9, 10, 11});
  CHECK(b.response_begin == std::vector<int64_t>{0, 2, 3});
  CHECK(b.distinct_prompts == 2);
}

TEST_CASE("pack_shared_prompts: empty prompts or responses and mismatched lists are errors", "[rl][packed][errors]") {
  const std::vector<Tokens> one = {{1, 2}}, empty = {{}}, two = {{1}, {2}};
  CHECK_THROWS_WITH(rl::pack_shared_prompts(spans(empty), spans(one), Device::cpu),
                    Contains("pack_shared_prompts: sequence 0 has 0 prompt and 2 response tokens (both must be > 0)"));
  CHECK_THROWS_WITH(rl::pack_shared_prompts(spans(one), spans(empty), Device::cpu),
                    Contains("sequence 0 has 2 prompt and 0 response tokens"));
  CHECK_THROWS_WITH(rl::pack_shared_prompts(spans(one), spans(two), Device::cpu),
                    Contains("pack_shared_prompts: 1 prompts for 2 responses"));
}

TEST_CASE("forward_packed: the padded forward's logits bit for bit, its gradients up to summation order",
          "[rl][packed][model]") {
  for (model::Architecture arch : {model::Architecture::llama, model::Architecture::qwen2, model::Architecture::gpt2}) {
    // Short sequences (attention's one-tile path) and ones past 64 keys (its blocked path).
    for (int64_t longest_response : {int64_t{12}, int64_t{90}}) {
      INFO("architecture " << static_cast<int>(arch) << ", responses up to " << longest_response << " tokens");
      model::Transformer m(tiny_config(arch));
      m.init_weights(7);
      std::vector<Tokens> prompts, responses;
      grouped_sequences(11, longest_response, prompts, responses);
      const rl::SharedPromptBatch packed = rl::pack_shared_prompts(spans(prompts), spans(responses), Device::cpu);
      CHECK(packed.distinct_prompts == 3);

      Tensor reference = padded_logits(m, prompts, responses);
      weighted_sum(reference, 3).backward();
      const auto reference_grads = gradients(m);
      Tensor logits = m.forward_packed(packed.layout);
      REQUIRE(logits.shape() == reference.shape());
      CHECK(bitwise_equal(logits.to_vector(), reference.to_vector()));
      weighted_sum(logits, 3).backward();
      const auto grads = gradients(m);
      // A shared row's gradient adds its sequences' terms before the weight gradient sums over rows: only
      // the order of additions differs, so fp32 round-off relative to each gradient's largest entry.
      double worst = 0.0;
      for (size_t t = 0; t < grads.size(); ++t) {
        double scale = 1e-12, diff = 0.0;
        for (size_t i = 0; i < grads[t].size(); ++i) {
          scale = std::max(scale, std::fabs(static_cast<double>(reference_grads[t][i])));
          diff = std::max(diff, std::fabs(static_cast<double>(grads[t][i]) - reference_grads[t][i]));
        }
        worst = std::max(worst, diff / scale);
      }
      CHECK(worst < 1e-4);
      CHECK(worst > 0.0);  // the sums really are ordered differently (the prompts are shared)
    }
  }
}

TEST_CASE("forward_packed: logits and gradients are bitwise identical with 1 and 2 threads",
          "[rl][packed][model][determinism]") {
  model::Transformer m(tiny_config(model::Architecture::llama));
  m.init_weights(5);
  std::vector<Tokens> prompts, responses;
  grouped_sequences(13, 90, prompts, responses);
  const rl::SharedPromptBatch packed = rl::pack_shared_prompts(spans(prompts), spans(responses), Device::cpu);
  auto [one, two] = with_1_and_2_threads([&] {
    Tensor logits = m.forward_packed(packed.layout);
    weighted_sum(logits, 4).backward();
    std::vector<std::vector<float>> out = gradients(m);
    out.push_back(logits.to_vector());
    return out;
  });
  REQUIRE(one.size() == two.size());
  for (size_t t = 0; t < one.size(); ++t) CHECK(bitwise_equal(one[t], two[t]));
}

TEST_CASE("forward_packed: a malformed layout names the field and what it must be", "[rl][packed][model][errors]") {
  model::Transformer m(tiny_config(model::Architecture::llama));
  const std::vector<Tokens> prompts = {{1, 2, 3}}, responses = {{4, 5}};
  const rl::SharedPromptBatch good = rl::pack_shared_prompts(spans(prompts), spans(responses), Device::cpu);
  model::PackedLayout l = good.layout;
  l.slot_rows = Tensor::from_ints({0, 1}, {2});
  CHECK_THROWS_WITH(m.forward_packed(l), Contains("forward_packed: slot_rows must be i32 [5], got i32[2]"));
  l = good.layout;
  l.positions = Tensor::from_ints({0, 1}, {1, 2});
  CHECK_THROWS_WITH(m.forward_packed(l), Contains("forward_packed: positions must be [1, 4]"));
  l = good.layout;
  l.output_rows = Tensor::from_ints({0, 9}, {2});
  CHECK_THROWS_WITH(m.forward_packed(l), Contains("gather_rows: index 9 at position 1 is out of range for x of 4 rows"));
  const std::vector<Tokens> long_response = {Tokens(200, 3)};
  const rl::SharedPromptBatch too_long = rl::pack_shared_prompts(spans(prompts), spans(long_response), Device::cpu);
  CHECK_THROWS_WITH(m.forward_packed(too_long.layout),
                    Contains("forward_packed: sequence length 203 exceeds max_position_embeddings 160"));
}
