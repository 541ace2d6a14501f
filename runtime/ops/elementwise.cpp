#include "runtime/ops/elementwise.h"

#include "runtime/elementwise_math.h"
#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

using detail::check_f32;
using detail::check_same_device;

namespace {

// ---- broadcasting ------------------------------------------------------------------------------

bool is_suffix(const Shape& small, const Shape& big) {
  int64_t lead = 0;
  while (lead < small.rank() && small[lead] == 1) ++lead;  // leading 1s never matter
  const int64_t n = small.rank() - lead;
  if (n > big.rank()) return false;
  for (int64_t i = 0; i < n; ++i)
    if (small[lead + i] != big[big.rank() - n + i]) return false;
  return true;
}

// [d0..dk, 1, .., 1] against [d0..dk, e.., ..]: returns k+1 (the count of leading dims kept), or -1.
int64_t column_prefix(const Shape& small, const Shape& big) {
  if (small.rank() != big.rank()) return -1;
  int64_t k = small.rank();
  while (k > 0 && small[k - 1] == 1) --k;
  for (int64_t i = 0; i < k; ++i)
    if (small[i] != big[i]) return -1;
  return k;
}

// Plans out = a (op) b; out_shape receives the broadcast shape.
BinaryPlan plan_broadcast(const char* op, const Shape& a, const Shape& b, Shape& out_shape) {
  BinaryPlan plan;
  if (a == b) {
    out_shape = a;
    plan.rows = 1;
    plan.cols = a.numel();
    return plan;
  }
  const bool a_big = a.numel() > b.numel() || (a.numel() == b.numel() && a.rank() >= b.rank());
  const Shape& big = a_big ? a : b;
  const Shape& small = a_big ? b : a;
  BroadcastMode small_mode;
  if (is_suffix(small, big)) {
    small_mode = BroadcastMode::repeat_rows;
    plan.cols = small.numel();
    plan.rows = plan.cols == 0 ? 0 : big.numel() / plan.cols;
  } else if (int64_t k = column_prefix(small, big); k >= 0) {
    small_mode = BroadcastMode::repeat_cols;
    plan.rows = big.numel_range(0, k);
    plan.cols = big.numel_range(k, big.rank());
  } else {
    fail(op, ": cannot broadcast shapes ", a, " and ", b,
         " (gtpo broadcasts a trailing-dims suffix such as [C] against [B, T, C], or a trailing size-1 ",
         "column such as [B, T, 1] against [B, T, C])");
  }
  (a_big ? plan.b : plan.a) = small_mode;
  out_shape = big;
  return plan;
}

// Sums a full [rows, cols] gradient down to an operand's broadcast layout.
Tensor reduce_to_operand(const Tensor& full_grad, BroadcastMode mode, const BinaryPlan& plan, const Shape& shape) {
  if (mode == BroadcastMode::full) return full_grad.view(shape);
  Tensor out = Tensor::empty(shape, full_grad.device());
  if (mode == BroadcastMode::repeat_rows)
    full_grad.backend().reduce_sum(full_grad.data(), out.data(), 1, plan.rows, plan.cols, 1.0f);
  else
    full_grad.backend().reduce_sum(full_grad.data(), out.data(), plan.rows, plan.cols, 1, 1.0f);
  return out;
}

Tensor binary_raw(BinaryOp op, const Tensor& a, BroadcastMode am, const Tensor& b, BroadcastMode bm,
                  const BinaryPlan& plan, const Shape& out_shape) {
  Tensor out = Tensor::empty(out_shape, a.device());
  BinaryPlan p = plan;
  p.a = am;
  p.b = bm;
  a.backend().binary(op, a.data(), b.data(), out.data(), p);
  return out;
}

// ---- binary op node -------------------------------------------------------------------------------

struct BinaryBackward final : Node {
  BinaryOp op;
  BinaryPlan plan;
  Shape a_shape, b_shape, out_shape;
  SavedTensor a, b, out;  // only what op needs: mul saves a and b, div saves b and out
  const char* name() const override { return "BinaryBackward"; }

  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    const auto full = BroadcastMode::full;
    Tensor ga, gb;
    if (needs_input_grad(0)) {
      Tensor g;
      switch (op) {
        case BinaryOp::add:
        case BinaryOp::sub: g = gy; break;
        case BinaryOp::mul: g = binary_raw(BinaryOp::mul, gy, full, b.unpack(name()), plan.b, plan, out_shape); break;
        case BinaryOp::div: g = binary_raw(BinaryOp::div, gy, full, b.unpack(name()), plan.b, plan, out_shape); break;
      }
      ga = reduce_to_operand(g, plan.a, plan, a_shape);
    }
    if (needs_input_grad(1)) {
      Tensor g;
      switch (op) {
        case BinaryOp::add: g = gy; break;
        case BinaryOp::sub: g = ops::neg(gy); break;
        case BinaryOp::mul: g = binary_raw(BinaryOp::mul, gy, full, a.unpack(name()), plan.a, plan, out_shape); break;
        case BinaryOp::div: {
          // d(a/b)/db = -out / b
          Tensor t = binary_raw(BinaryOp::mul, gy, full, out.unpack(name()), full, plan, out_shape);
          g = ops::neg(binary_raw(BinaryOp::div, t, full, b.unpack(name()), plan.b, plan, out_shape));
          break;
        }
      }
      gb = reduce_to_operand(g, plan.b, plan, b_shape);
    }
    return {ga, gb};
  }
  void release_saved() override { release_all(a, b, out); }
};

Tensor binary_op(BinaryOp op, const char* name, const Tensor& a, const Tensor& b) {
  check_f32(name, a, "a");
  check_f32(name, b, "b");
  check_same_device(name, a, b);
  Shape out_shape;
  const BinaryPlan plan = plan_broadcast(name, a.shape(), b.shape(), out_shape);
  Tensor out = binary_raw(op, a, plan.a, b, plan.b, plan, out_shape);
  if (should_record({&a, &b})) {
    auto node = std::make_shared<BinaryBackward>();
    node->op = op;
    node->plan = plan;
    node->a_shape = a.shape();
    node->b_shape = b.shape();
    node->out_shape = out_shape;
    if (op == BinaryOp::mul) {
      if (b.requires_grad()) node->a = SavedTensor(a);
      if (a.requires_grad()) node->b = SavedTensor(b);
    } else if (op == BinaryOp::div) {
      node->b = SavedTensor(b);
      if (b.requires_grad()) node->out = SavedTensor(out);
    }
    attach_node(node, {&a, &b}, {&out});
  }
  return out;
}

// ---- unary op node --------------------------------------------------------------------------------

struct UnaryBackward final : Node {
  UnaryOp op;
  float scalar = 0.0f;
  SavedTensor x, y;
  const char* name() const override { return "UnaryBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    Tensor xs = x.unpack(name()), ys = y.unpack(name());
    Tensor gx = Tensor::empty(gy.shape(), gy.device());
    gy.backend().unary_backward(op, xs.defined() ? xs.data() : nullptr, ys.defined() ? ys.data() : nullptr,
                                gy.data(), gx.data(), gy.numel(), scalar);
    return {gx};
  }
  void release_saved() override { release_all(x, y); }
};

// Saves only the forward value the derivative reads (runtime/elementwise_math.h).
Tensor unary_op(UnaryOp op, const char* name, const Tensor& x, float scalar = 0.0f) {
  check_f32(name, x, "x");
  Tensor y = Tensor::empty(x.shape(), x.device());
  x.backend().unary(op, x.data(), y.data(), x.numel(), scalar);
  if (should_record({&x})) {
    auto node = std::make_shared<UnaryBackward>();
    node->op = op;
    node->scalar = scalar;
    if (elementwise::grad_reads_input(op)) node->x = SavedTensor(x);
    if (elementwise::grad_reads_output(op)) node->y = SavedTensor(y);
    attach_node(node, {&x}, {&y});
  }
  return y;
}

// ---- fused SwiGLU --------------------------------------------------------------------------------

struct SwigluBackward final : Node {
  SavedTensor gate, up;
  const char* name() const override { return "SwigluBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gout = grads[0];
    Tensor g = gate.unpack(name()), u = up.unpack(name());
    Tensor ggate = Tensor::empty(g.shape(), g.device()), gup = Tensor::empty(u.shape(), u.device());
    gout.backend().swiglu_backward(g.data(), u.data(), gout.data(), ggate.data(), gup.data(), gout.numel());
    return {ggate, gup};
  }
  void release_saved() override { release_all(gate, up); }
};

}  // namespace

Tensor swiglu(const Tensor& gate, const Tensor& up) {
  check_f32("swiglu", gate, "gate");
  check_f32("swiglu", up, "up");
  check_same_device("swiglu", gate, up);
  GTPO_CHECK(gate.shape() == up.shape(), "swiglu: gate ", gate.shape(), " and up ", up.shape(),
             " must have the same shape");
  if (!gate.backend().supports(Capability::fused_swiglu)) return mul(silu(gate), up);
  Tensor out = Tensor::empty(gate.shape(), gate.device());
  gate.backend().swiglu_forward(gate.data(), up.data(), out.data(), gate.numel());
  if (should_record({&gate, &up})) {
    auto node = std::make_shared<SwigluBackward>();
    node->gate = SavedTensor(gate);
    node->up = SavedTensor(up);
    attach_node(node, {&gate, &up}, {&out});
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::div, "div", a, b); }

Tensor add_scalar(const Tensor& x, float s) { return unary_op(UnaryOp::add_scalar, "add_scalar", x, s); }
Tensor mul_scalar(const Tensor& x, float s) { return unary_op(UnaryOp::scale, "mul_scalar", x, s); }
Tensor pow_scalar(const Tensor& x, float e) { return unary_op(UnaryOp::pow_scalar, "pow_scalar", x, e); }
Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, "neg", x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, "exp", x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, "log", x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, "relu", x); }
Tensor gelu(const Tensor& x) { return unary_op(UnaryOp::gelu_tanh, "gelu", x); }
Tensor silu(const Tensor& x) { return unary_op(UnaryOp::silu, "silu", x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::sigmoid, "sigmoid", x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, "tanh", x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, "sqrt", x); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::square, "square", x); }

}  // namespace gtpo::ops
