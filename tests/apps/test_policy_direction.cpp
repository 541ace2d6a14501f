// The policy update moves the model the right way: responses with positive advantage become more
// likely, responses with negative advantage less likely.
#include <catch2/catch.hpp>

#include "data/tasks/registry.h"
#include "data/tokenizer/char_tokenizer.h"
#include "rl/math/advantages.h"
#include "rl/policy_update.h"
#include "rl/rollout_phase.h"
#include "runtime/ops.h"

using namespace gtpo;

namespace {
rl::ProblemSource arith_source() { return rl::ProblemSource::from_task(data::make_task("arith", {}), 1); }

// A small Llama-family model over the tokenizer's vocabulary.
model::ModelConfig tiny_llama(const data::Tokenizer& tok) {
  model::ModelConfig c;
  c.architecture = model::Architecture::llama;
  c.vocab_size = tok.vocab_size();
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  c.norm_eps = 1e-6f;
  return c;
}

double sequence_logprob(const model::Transformer& m, const model::Sample& s) {
  NoGradGuard guard;
  std::vector<int32_t> seq = s.prompt_tokens;
  seq.insert(seq.end(), s.tokens.begin(), s.tokens.end());
  const int64_t T = static_cast<int64_t>(seq.size()), k = static_cast<int64_t>(s.prompt_tokens.size());
  Tensor logits = m.forward(Tensor::from_ints(seq, {1, T}));
  Tensor rows = ops::reshape(ops::slice(logits, 1, k - 1, T - 1), {T - k, m.config().vocab_size});
  std::vector<int32_t> targets(seq.begin() + k, seq.end());
  double total = 0;
  for (float v : ops::token_logprob_entropy(rows, Tensor::from_ints(targets, {T - k})).logprob.to_vector()) total += v;
  return total;
}
}  // namespace

TEST_CASE("policy update: positive advantages gain probability, negative ones lose it", "[rl][update]") {
  for (const char* algo : {"grpo", "gtpo", "grpo_s"}) {
    INFO(algo);
    const rl::ProblemSource source = arith_source();
    data::CharTokenizer tok(source.alphabet());
    model::Transformer m(tiny_llama(tok));
    m.init_weights(3);
    model::SamplingOptions so;
    so.group_size = 4;
    so.max_new_tokens = 8;
    rl::attach_tokenizer(so, tok);
    rl::RlConfig rl = rl::defaults_for(algo);
    rl.dynamic_sampling = false;
    rl.overlong = rl::Overlong::None;
    uint64_t cursor = 0;
    rl::RolloutBatch batch = rl::collect_rollouts(m, tok, source, cursor, 3, so, rl);
    // Pretend the first two responses of each group were correct.
    for (size_t i = 0; i < batch.items.size(); ++i) {
      batch.items[i].verdict.correct = batch.responses[i].correct = (i % 4) < 2;
      batch.items[i].truncated = batch.responses[i].truncated = false;
    }
    const rl::Grouping groups = batch.groups();
    rl::BatchContext context;
    context.groups = &groups;
    rl::AdvantageResult adv = rl::compute_advantages(batch.responses, rl, context);
    std::vector<double> before;
    for (const auto& it : batch.items) before.push_back(sequence_logprob(m, it.sample));
    optim::AdamW adam(m.parameters(), {1e-2f, 0.9f, 0.99f, 1e-8f, 0.0f});
    rl::UpdateOptions uo;
    uo.lr = 1e-2f;
    rl::run_policy_update(m, adam, batch, adv, rl, uo);
    double up = 0, down = 0;
    for (size_t i = 0; i < batch.items.size(); ++i) {
      const double delta = sequence_logprob(m, batch.items[i].sample) - before[i];
      ((i % 4) < 2 ? up : down) += delta;
    }
    CHECK(up > 0.0);
    CHECK(down < 0.0);
  }
}

TEST_CASE("policy update: loss, policy_loss and kl_loss are means per optimiser step",
          "[rl][update][metrics]") {
  // With lr 0 every epoch sees the same weights, so each optimiser step has the same losses: their mean over
  // two epochs equals one epoch's values (a sum would be twice them).
  const rl::ProblemSource source = arith_source();
  data::CharTokenizer tok(source.alphabet());
  model::Transformer m(tiny_llama(tok)), reference(tiny_llama(tok));
  m.init_weights(3);
  reference.init_weights(4);  // a different reference: the KL term is not 0
  model::SamplingOptions so;
  so.group_size = 4;
  so.max_new_tokens = 8;
  rl::attach_tokenizer(so, tok);
  rl::RlConfig rl = rl::defaults_for("grpo");
  rl.dynamic_sampling = false;
  rl.overlong = rl::Overlong::None;
  rl.kl_coef = 0.1;
  uint64_t cursor = 0;
  rl::RolloutBatch batch = rl::collect_rollouts(m, tok, source, cursor, 2, so, rl);
  for (size_t i = 0; i < batch.items.size(); ++i)
    batch.items[i].verdict.correct = batch.responses[i].correct = i % 2;
  const rl::Grouping groups = batch.groups();
  rl::BatchContext context;
  context.groups = &groups;
  const rl::AdvantageResult adv = rl::compute_advantages(batch.responses, rl, context);
  rl::UpdateOptions uo;
  uo.lr = 0.0f;
  auto update = [&](int epochs) {
    rl::RlConfig r = rl;
    r.ppo_epochs = epochs;
    optim::AdamW adam(m.parameters(), {0.0f, 0.9f, 0.99f, 1e-8f, 0.0f});
    return rl::run_policy_update(m, adam, batch, adv, r, uo, &reference);
  };
  const rl::UpdateStats one = update(1), two = update(2);
  REQUIRE(one.optimizer_steps == 1);
  REQUIRE(two.optimizer_steps == 2);
  CHECK(one.loss.kl_loss != 0.0);
  CHECK(two.loss.loss == one.loss.loss);
  CHECK(two.loss.policy_loss == one.loss.policy_loss);
  CHECK(two.loss.kl_loss == one.loss.kl_loss);
  CHECK(two.loss.approx_kl == one.loss.approx_kl);
  CHECK(two.tokens == 2 * one.tokens);  // loss_tokens: summed over epochs, as documented
}
