#include "rl/sft.h"

#include <chrono>
#include <limits>

#include "data/prompt_tokens.h"
#include "model/memory_estimate.h"
#include "rl/non_finite.h"
#include "rl/run_config_schema.h"
#include "rl/sequence_batch.h"
#include "runtime/backend.h"
#include "runtime/dist/zero.h"
#include "runtime/error.h"
#include "runtime/ops.h"

namespace gtpo::rl {

namespace {
// The sum of every micro-batch's loss, in micro-batch order (the ranks hold contiguous blocks of them).
double sum_in_micro_batch_order(dist::Communicator& comm, const std::vector<double>& mine) {
  double sum = 0.0;
  if (comm.size() == 1) {
    for (double v : mine) sum += v;
    return sum;
  }
  dist::ByteWriter w;
  w.put_vector(mine);
  for (const std::vector<uint8_t>& part : comm.allgather(w.bytes(), "sft losses"))
    for (double v : dist::ByteReader(part).get_vector<double>()) sum += v;
  return sum;
}
}  // namespace

std::vector<int32_t> sft_sequence(const data::Tokenizer& tokenizer, const data::Problem& problem,
                                  int64_t& first_target) {
  std::vector<int32_t> seq = data::encode_prompt(tokenizer, problem);
  first_target = static_cast<int64_t>(seq.size());
  std::vector<int32_t> solution = tokenizer.encode(problem.reference_solution);
  seq.insert(seq.end(), solution.begin(), solution.end());
  if (tokenizer.eos_id() >= 0) seq.push_back(tokenizer.eos_id());
  return seq;
}

std::vector<RunKey> schema::sft_keys() {
  using config::field;
  const double inf = std::numeric_limits<double>::infinity();
  const auto i64 = [](int64_t lo) { return config::integer<int64_t>(lo); };
  return {
      field("sft", "steps", &RunConfig::sft, &SftSection::steps, i64(0),
            "supervised warm-up steps on reference solutions; 0 = no SFT"),
      field("sft", "batch_size", &RunConfig::sft, &SftSection::batch_size, config::integer<int64_t>(1, 1 << 20),
            "problems per SFT step"),
      field("sft", "lr", &RunConfig::sft, &SftSection::lr, config::number(0, inf, true), "peak SFT learning rate"),
      field("sft", "schedule", &RunConfig::sft, &SftSection::schedule, schema::schedule_codec(),
            "SFT learning-rate schedule over sft.steps"),
      field("sft", "warmup_steps", &RunConfig::sft, &SftSection::warmup_steps, i64(0),
            "SFT linear warm-up steps (not with schedule constant)"),
      field("sft", "weight_decay", &RunConfig::sft, &SftSection::weight_decay, config::number(0, inf),
            "SFT decoupled weight decay"),
      field("sft", "beta2", &RunConfig::sft, &SftSection::beta2, config::number(0, 1, false, true), "SFT AdamW β2"),
      field("sft", "micro_batch_tokens", &RunConfig::sft, &SftSection::micro_batch_tokens, i64(0),
            "padded tokens of one SFT forward/backward; the batch is split into micro-batches that fit and their "
            "gradients add up to the same update; 0 = no bound"),
      field("sft", "micro_batch_memory_mb", &RunConfig::sft, &SftSection::micro_batch_memory_mb, i64(0),
            "with micro_batch_tokens 0: micro-batches hold at most this many MiB of activations, by an estimate "
            "of the model's bytes per token (model/memory_estimate.h); small models never reach it; 0 = no bound"),
      field("sft", "group_by_length", &RunConfig::sft, &SftSection::group_by_length, config::boolean(),
            "sort the batch's sequences by length and cut it into micro-batches padded only to their own longest, "
            "wherever the padding saved outweighs one more forward/backward; false = micro-batches in problem "
            "order (with micro_batch_tokens 0: the whole batch at once)"),
      field("sft", "eval_every", &RunConfig::sft, &SftSection::eval_every, i64(0),
            "greedy test accuracy every this many SFT steps, logged in sft.jsonl; 0 = only at the end"),
  };
}

optim::AdamWOptions sft_adam_options(const RunConfig& config) {
  optim::AdamWOptions adam;
  adam.weight_decay = static_cast<float>(config.sft.weight_decay);
  adam.beta2 = static_cast<float>(config.sft.beta2);
  return adam;
}

void run_sft(model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
             const RunConfig& config, uint64_t& cursor, const std::function<void(const SftStep&)>& on_step) {
  optim::AdamW optimizer(model.parameters(), sft_adam_options(config));
  int64_t steps_done = 0;
  continue_sft(model, tokenizer, source, config, optimizer, steps_done, cursor, on_step, [] { return false; });
}

void continue_sft(model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
                  const RunConfig& config, optim::AdamW& optimizer, int64_t& steps_done, uint64_t& cursor,
                  const std::function<void(const SftStep&)>& on_step, const std::function<bool()>& stop,
                  dist::Communicator& comm) {
  const SftSection& o = config.sft;
  if (o.steps <= 0) return;
  GTPO_CHECK(o.batch_size > 0, "sft: batch_size must be positive");
  optim::LrSchedule schedule({o.schedule, static_cast<float>(o.lr), o.warmup_steps,
                              std::max<int64_t>(o.steps, o.warmup_steps + 1), 0.1f});
  const float grad_clip = static_cast<float>(config.optim.grad_clip);
  const int32_t pad = tokenizer.pad_id() >= 0 ? tokenizer.pad_id() : 0;
  const int64_t V = model.config().vocab_size;
  for (int64_t step = steps_done; step < o.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int64_t> firsts, lengths;
    int64_t tokens = 0;
    for (int64_t i = 0; i < o.batch_size; ++i) {
      int64_t first = 0;
      seqs.push_back(sft_sequence(tokenizer, source.train(cursor++), first));
      GTPO_CHECK(static_cast<int64_t>(seqs.back().size()) <= model.config().max_position_embeddings,
                 "sft: a training sequence of ", seqs.back().size(), " tokens exceeds max_position_embeddings ",
                 model.config().max_position_embeddings);
      firsts.push_back(first);
      lengths.push_back(static_cast<int64_t>(seqs.back().size()));
      tokens += lengths.back() - first;
    }
    const auto micro = plan_micro_batches(
        lengths, {model::micro_batch_token_budget(o.micro_batch_tokens, o.micro_batch_memory_mb, model.config()),
                  o.group_by_length, micro_batch_overhead_tokens(model.device())});
    // With several ranks, the micro-batches are dealt out in contiguous blocks; the losses are added in
    // micro-batch order whoever computed them.
    const dist::Share share = dist::share_of(static_cast<int64_t>(micro.size()), comm.rank(), comm.size());
    std::vector<double> micro_losses;
    for (int64_t m = share.first; m < share.last; ++m) {
      const std::vector<size_t>& rows = micro[static_cast<size_t>(m)];
      std::vector<std::vector<int32_t>> part;
      for (size_t i : rows) part.push_back(seqs[i]);
      PaddedBatch b = pad_right(part, pad, model.device());
      // Targets: the next token at supervised positions, ignore (-100) elsewhere.
      std::vector<int32_t> targets(b.next.size(), -100);
      int64_t part_tokens = 0;
      for (int64_t r = 0; r < b.rows; ++r) {
        const std::vector<int32_t>& seq = part[static_cast<size_t>(r)];
        for (int64_t j = firsts[rows[static_cast<size_t>(r)]]; j < static_cast<int64_t>(seq.size()); ++j) {
          targets[static_cast<size_t>(b.predicting(r, j))] = seq[static_cast<size_t>(j)];
          ++part_tokens;
        }
      }
      Tensor logits = ops::reshape(model.forward(b.tokens), {b.rows * b.length, V});
      Tensor loss = ops::cross_entropy(logits, Tensor::from_ints(targets, {b.rows * b.length}, model.device()));
      // The mean over this part, weighted by its share of the batch's tokens (exactly the batch mean when
      // there is one part).
      if (micro.size() > 1)
        loss = ops::mul_scalar(loss, static_cast<float>(part_tokens) / static_cast<float>(tokens));
      loss.backward();
      micro_losses.push_back(loss.item());
    }
    SftStep s;
    s.step = step + 1;
    s.loss = sum_in_micro_batch_order(comm, micro_losses);
    s.lr = schedule.lr_at(step);
    // A non-finite loss is reported before the update: the norm below would be non-finite too.
    check_finite(s.loss, "sft", s.step, "loss");
    s.grad_norm = dist::optimizer_step(comm, optimizer, grad_clip, static_cast<float>(s.lr)).grad_norm;
    check_finite(s.grad_norm, "sft", s.step, "gradient norm");
    model.parameters().zero_grad();
    s.tokens = tokens;
    backend_for(model.device()).synchronize();  // count the optimiser's queued GPU kernels in this step
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    steps_done = s.step;
    on_step(s);
    if (s.step < o.steps && stop()) return;
  }
}

}  // namespace gtpo::rl
