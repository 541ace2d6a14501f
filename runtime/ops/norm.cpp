#include "runtime/ops/norm.h"

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

struct NormShape {
  int64_t rows = 0, cols = 0;
};

// Validates x [..., C] against weight [C] (and bias [C] when defined).
NormShape check_norm_args(const char* op, const Tensor& x, const Tensor& weight, const Tensor* bias) {
  detail::check_f32(op, x, "x");
  detail::check_rank_at_least(op, x, 1, "x");
  detail::check_f32(op, weight, "weight");
  detail::check_same_device(op, x, weight);
  const int64_t cols = x.size(-1);
  GTPO_CHECK(weight.shape() == Shape{cols}, op, ": weight must be [", cols, "] to match x ", x.describe(), ", got ",
             weight.describe());
  if (bias && bias->defined()) {
    detail::check_f32(op, *bias, "bias");
    detail::check_same_device(op, x, *bias);
    GTPO_CHECK(bias->shape() == Shape{cols}, op, ": bias must be [", cols, "] to match x ", x.describe(), ", got ",
               bias->describe());
  }
  return {x.shape().numel_range(0, x.rank() - 1), cols};
}

// x [rows, C] (leading dims flattened), weight/bias [C], mean/rstd [rows] from the forward.
// Inputs: x, weight, bias (bias may be absent).
struct LayerNormBackward final : Node {
  NormShape s;
  bool has_bias = false;
  SavedTensor x, weight, mean, rstd;
  const char* name() const override { return "LayerNormBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    Tensor xs = x.unpack(name()), ws = weight.unpack(name());
    Tensor ms = mean.unpack(name()), rs = rstd.unpack(name());
    Tensor gx = Tensor::empty(xs.shape(), gy.device());
    Tensor gw = Tensor::empty(ws.shape(), gy.device());
    Tensor gb = has_bias ? Tensor::empty(ws.shape(), gy.device()) : Tensor();
    gy.backend().layer_norm_backward(xs.data(), ws.data(), ms.data(), rs.data(), gy.data(), gx.data(), gw.data(),
                                     has_bias ? gb.data() : nullptr, s.rows, s.cols);
    return {needs_input_grad(0) ? gx : Tensor(), needs_input_grad(1) ? gw : Tensor(),
            needs_input_grad(2) ? gb : Tensor()};
  }
  void release_saved() override { release_all(x, weight, mean, rstd); }
};

// x [rows, C], weight [C], rstd [rows] from the forward.
struct RmsNormBackward final : Node {
  NormShape s;
  SavedTensor x, weight, rstd;
  const char* name() const override { return "RmsNormBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    Tensor xs = x.unpack(name()), ws = weight.unpack(name()), rs = rstd.unpack(name());
    Tensor gx = Tensor::empty(xs.shape(), gy.device());
    Tensor gw = Tensor::empty(ws.shape(), gy.device());
    gy.backend().rms_norm_backward(xs.data(), ws.data(), rs.data(), gy.data(), gx.data(), gw.data(), s.rows, s.cols);
    return {needs_input_grad(0) ? gx : Tensor(), needs_input_grad(1) ? gw : Tensor()};
  }
  void release_saved() override { release_all(x, weight, rstd); }
};

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps) {
  const NormShape s = check_norm_args("layer_norm", x, weight, &bias);
  Tensor y = Tensor::empty(x.shape(), x.device());
  Tensor mean = Tensor::empty(Shape{s.rows}, x.device());
  Tensor rstd = Tensor::empty(Shape{s.rows}, x.device());
  x.backend().layer_norm_forward(x.data(), weight.data(), bias.defined() ? bias.data() : nullptr, y.data(),
                                 mean.data(), rstd.data(), s.rows, s.cols, eps);
  if (should_record({&x, &weight, &bias})) {
    auto node = std::make_shared<LayerNormBackward>();
    node->s = s;
    node->has_bias = bias.defined();
    node->x = SavedTensor(x);
    node->weight = SavedTensor(weight);
    node->mean = SavedTensor(mean);
    node->rstd = SavedTensor(rstd);
    attach_node(node, {&x, &weight, &bias}, {&y});
  }
  return y;
}

Tensor rms_norm(const Tensor& x, const Tensor& weight, float eps) {
  const NormShape s = check_norm_args("rms_norm", x, weight, nullptr);
  Tensor y = Tensor::empty(x.shape(), x.device());
  Tensor rstd = Tensor::empty(Shape{s.rows}, x.device());
  x.backend().rms_norm_forward(x.data(), weight.data(), y.data(), rstd.data(), s.rows, s.cols, eps);
  if (should_record({&x, &weight})) {
    auto node = std::make_shared<RmsNormBackward>();
    node->s = s;
    node->x = SavedTensor(x);
    node->weight = SavedTensor(weight);
    node->rstd = SavedTensor(rstd);
    attach_node(node, {&x, &weight}, {&y});
  }
  return y;
}

}  // namespace gtpo::ops
