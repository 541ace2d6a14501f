#include "rl/sft.h"

#include <chrono>

#include "rl/sequence_batch.h"
#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/optim/grad_clip.h"

namespace gtpo::rl {

std::vector<int32_t> sft_sequence(const data::Tokenizer& tokenizer, const data::Problem& problem,
                                  int64_t& first_target) {
  std::vector<int32_t> seq = tokenizer.encode(problem.prompt);
  first_target = static_cast<int64_t>(seq.size());
  std::vector<int32_t> solution = tokenizer.encode(problem.reference_solution);
  seq.insert(seq.end(), solution.begin(), solution.end());
  if (tokenizer.eos_id() >= 0) seq.push_back(tokenizer.eos_id());
  return seq;
}

void run_sft(model::Transformer& model, const data::Tokenizer& tokenizer, const ProblemSource& source,
             const SftOptions& o, uint64_t& cursor, const std::function<void(const SftStep&)>& on_step) {
  if (o.steps <= 0) return;
  GTPO_CHECK(o.batch_size > 0, "sft: batch_size must be positive");
  optim::AdamWOptions adam;
  adam.weight_decay = o.weight_decay;
  adam.beta2 = 0.99f;
  optim::AdamW optimizer(model.parameters(), adam);
  optim::LrSchedule schedule(o.schedule);
  const int32_t pad = tokenizer.pad_id() >= 0 ? tokenizer.pad_id() : 0;
  const int64_t V = model.config().vocab_size;
  for (int64_t step = 0; step < o.steps; ++step) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int64_t> firsts;
    for (int64_t i = 0; i < o.batch_size; ++i) {
      int64_t first = 0;
      seqs.push_back(sft_sequence(tokenizer, source.train(cursor++), first));
      GTPO_CHECK(static_cast<int64_t>(seqs.back().size()) <= model.config().max_position_embeddings,
                 "sft: a training sequence of ", seqs.back().size(), " tokens exceeds max_position_embeddings ",
                 model.config().max_position_embeddings);
      firsts.push_back(first);
    }
    PaddedBatch b = pad_right(seqs, pad, model.device());
    // Targets: the next token at supervised positions, ignore (-100) elsewhere.
    std::vector<int32_t> targets(b.next.size(), -100);
    int64_t tokens = 0;
    for (int64_t r = 0; r < b.rows; ++r)
      for (int64_t j = firsts[static_cast<size_t>(r)]; j < static_cast<int64_t>(seqs[static_cast<size_t>(r)].size()); ++j) {
        targets[static_cast<size_t>(b.predicting(r, j))] = seqs[static_cast<size_t>(r)][static_cast<size_t>(j)];
        ++tokens;
      }
    Tensor logits = ops::reshape(model.forward(b.tokens), {b.rows * b.length, V});
    Tensor loss = ops::cross_entropy(logits, Tensor::from_ints(targets, {b.rows * b.length}, model.device()));
    loss.backward();
    SftStep s;
    s.step = step + 1;
    s.loss = loss.item();
    s.grad_norm = optim::clip_grad_norm(model.parameters(), o.grad_clip);
    s.lr = schedule.lr_at(step);
    optimizer.step(static_cast<float>(s.lr));
    model.parameters().zero_grad();
    s.tokens = tokens;
    backend_for(model.device()).synchronize();  // count the optimiser's queued GPU kernels in this step
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    on_step(s);
  }
}

}  // namespace gtpo::rl
