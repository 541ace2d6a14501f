#include "runtime/ops/losses.h"

#include <cmath>

#include "runtime/ops/elementwise.h"
#include "runtime/ops/index_utils.h"
#include "runtime/ops/op_utils.h"
#include "runtime/ops/reduce.h"

namespace gtpo::ops {

namespace {

// logits [..., V] with rows = prod(...), targets [...]. Returns the number of rows not ignored.
// ignore_index is only honoured when allow_ignore is set.
int64_t check_vocab_op(const char* op, const Tensor& logits, const Tensor& targets, bool allow_ignore,
                       int32_t ignore_index) {
  detail::check_f32(op, logits, "logits");
  detail::check_i32(op, targets, "targets");
  detail::check_same_device(op, logits, targets);
  detail::check_rank_at_least(op, logits, 1, "logits");
  const Shape& ls = logits.shape();
  const std::vector<int64_t> lead(ls.dims().begin(), ls.dims().end() - 1);
  GTPO_CHECK(targets.shape() == Shape(lead), op, ": targets must have the logits' leading shape ", Shape(lead),
             " (logits ", ls, "), got ", targets.describe());
  const int64_t vocab = ls[-1];
  GTPO_CHECK(vocab > 0, op, ": the vocabulary (last dim of logits ", ls, ") is empty");
  detail::HostInts host(targets);
  int64_t counted = 0;
  for (int64_t r = 0; r < targets.numel(); ++r) {
    const int32_t t = host[r];
    if (allow_ignore && t == ignore_index) continue;
    if (t < 0 || t >= vocab) {
      if (allow_ignore)
        fail(op, ": target ", t, " at row ", r, " is out of range [0, ", vocab, ") and is not ignore_index (",
             ignore_index, ")");
      fail(op, ": target ", t, " at row ", r, " is out of range [0, ", vocab, ")");
    }
    ++counted;
  }
  return counted;
}

// loss [rows] -> glogits [rows, V] = grow[r] (softmax(x_r) - onehot(t_r)); 0 for ignored rows.
struct CrossEntropyBackward final : Node {
  SavedTensor logits, targets;
  Tensor lse;  // [rows], private to this node
  int32_t ignore_index = kIgnoreIndex;
  const char* name() const override { return "CrossEntropyBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    Tensor x = logits.unpack(name()), t = targets.unpack(name());
    const Tensor& grow = grads[0];
    const int64_t vocab = x.size(-1);
    Tensor gx = Tensor::empty(x.shape(), x.device());
    x.backend().cross_entropy_backward(x.data(), t.data_i32(), lse.data(), grow.data(), gx.data(), t.numel(), vocab,
                                       ignore_index);
    return {gx};
  }
  void release_saved() override { release_all(logits, targets, lse); }
};

// {logprob [rows], entropy [rows]} -> glogits [rows, V]
//   = (1/T) (glogprob (onehot - p) - gentropy p (log p + H)); a missing output gradient counts as zero.
struct LogprobEntropyBackward final : Node {
  SavedTensor logits, targets, entropy;
  Tensor lse;  // [rows], private to this node
  float inv_temperature = 1.0f;
  const char* name() const override { return "LogprobEntropyBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    Tensor x = logits.unpack(name()), t = targets.unpack(name()), h = entropy.unpack(name());
    const Tensor& glp = grads[0];
    const Tensor& gh = grads[1];
    Tensor gx = Tensor::empty(x.shape(), x.device());
    x.backend().logprob_entropy_backward(x.data(), t.data_i32(), lse.data(), h.data(),
                                         glp.defined() ? glp.data() : nullptr, gh.defined() ? gh.data() : nullptr,
                                         gx.data(), t.numel(), x.size(-1), inv_temperature);
    return {gx};
  }
  void release_saved() override { release_all(logits, targets, entropy, lse); }
};

Tensor cross_entropy_rows_impl(const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  const Tensor& x = logits;
  const int64_t rows = targets.numel(), vocab = x.size(-1);
  Tensor loss = Tensor::empty(targets.shape(), x.device());  // [...]
  Tensor lse = Tensor::empty(Shape{rows}, x.device());
  x.backend().cross_entropy_forward(x.data(), targets.data_i32(), loss.data(), lse.data(), rows, vocab,
                                    ignore_index);
  if (should_record({&x})) {
    auto node = std::make_shared<CrossEntropyBackward>();
    node->logits = SavedTensor(x);
    node->targets = SavedTensor(targets);
    node->lse = lse;
    node->ignore_index = ignore_index;
    attach_node(node, {&x}, {&loss});
  }
  return loss;
}

}  // namespace

Tensor cross_entropy_rows(const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  check_vocab_op("cross_entropy_rows", logits, targets, true, ignore_index);
  return cross_entropy_rows_impl(logits, targets, ignore_index);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int32_t ignore_index) {
  const int64_t counted = check_vocab_op("cross_entropy", logits, targets, true, ignore_index);
  Tensor rows = cross_entropy_rows_impl(logits, targets, ignore_index);
  // Ignored rows are exactly 0, so the sum over all rows is the sum over the counted ones.
  return mul_scalar(sum_all(rows), counted > 0 ? 1.0f / static_cast<float>(counted) : 0.0f);
}

LogprobEntropy token_logprob_entropy(const Tensor& logits, const Tensor& targets, float temperature) {
  const char* op = "token_logprob_entropy";
  GTPO_CHECK(std::isfinite(temperature) && temperature > 0.0f && std::isfinite(1.0f / temperature), op,
             ": temperature must be positive and finite (with a finite 1/T), got ", temperature);
  check_vocab_op(op, logits, targets, false, 0);
  const Tensor& x = logits;
  const int64_t rows = targets.numel(), vocab = x.size(-1);
  const float inv_t = 1.0f / temperature;
  LogprobEntropy out;
  out.logprob = Tensor::empty(targets.shape(), x.device());  // [...]
  out.entropy = Tensor::empty(targets.shape(), x.device());  // [...]
  Tensor lse = Tensor::empty(Shape{rows}, x.device());
  x.backend().logprob_entropy_forward(x.data(), targets.data_i32(), out.logprob.data(), out.entropy.data(),
                                      lse.data(), rows, vocab, inv_t);
  if (should_record({&x})) {
    auto node = std::make_shared<LogprobEntropyBackward>();
    node->logits = SavedTensor(x);
    node->targets = SavedTensor(targets);
    node->entropy = SavedTensor(out.entropy);
    node->lse = lse;
    node->inv_temperature = inv_t;
    attach_node(node, {&x}, {&out.logprob, &out.entropy});
  }
  return out;
}

}  // namespace gtpo::ops
