#include "runtime/ops/softmax.h"

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

// x, y [rows, cols] (leading dims flattened). Both backwards are written in terms of the forward output y:
//   softmax:     gx = y * (gy - sum(gy * y))
//   log_softmax: gx = gy - exp(y) * sum(gy)
struct SoftmaxBackward final : Node {
  bool log_softmax = false;
  int64_t rows = 0, cols = 0;
  SavedTensor y;
  const char* name() const override { return log_softmax ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    Tensor ys = y.unpack(name());
    Tensor gx = Tensor::empty(gy.shape(), gy.device());
    if (gx.numel() > 0) gy.backend().softmax_backward(ys.data(), gy.data(), gx.data(), rows, cols, log_softmax);
    return {gx};
  }
  void release_saved() override { y.reset(); }
};

Tensor softmax_impl(const char* op, const Tensor& x, bool log_softmax) {
  detail::check_f32(op, x, "x");
  detail::check_rank_at_least(op, x, 1, "x");
  const int64_t cols = x.size(-1);
  const int64_t rows = x.shape().numel_range(0, x.rank() - 1);  // safe when the last dim is 0
  Tensor y = Tensor::empty(x.shape(), x.device());
  if (y.numel() > 0) x.backend().softmax_forward(x.data(), y.data(), rows, cols, log_softmax);
  if (should_record({&x})) {
    auto node = std::make_shared<SoftmaxBackward>();
    node->log_softmax = log_softmax;
    node->rows = rows;
    node->cols = cols;
    node->y = SavedTensor(y);
    attach_node(node, {&x}, {&y});
  }
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x) { return softmax_impl("softmax", x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_impl("log_softmax", x, true); }

}  // namespace gtpo::ops
