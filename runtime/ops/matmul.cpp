#include "runtime/ops/matmul.h"

#include "runtime/ops/elementwise.h"
#include "runtime/ops/layout.h"
#include "runtime/ops/op_utils.h"
#include "runtime/ops/reshape.h"

namespace gtpo::ops {

namespace {

struct MatmulPlan {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool broadcast_b = false;  // b is one matrix shared by all of a's rows
};

// C[batch] = op(A) op(B) with A, B, C dense row-major; stride 0 for a shared operand.
void run_gemm(const Tensor& a, const Tensor& b, float* c, const MatmulPlan& p, bool ta, bool tb) {
  GemmArgs g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = p.m;
  g.n = p.n;
  g.k = p.k;
  g.a = a.data();
  g.lda = ta ? p.m : p.k;
  g.stride_a = p.m * p.k;
  g.b = b.data();
  g.ldb = tb ? p.k : p.n;
  g.stride_b = p.broadcast_b ? 0 : p.k * p.n;
  g.c = c;
  g.ldc = p.n;
  g.stride_c = p.m * p.n;
  g.batch = p.batch;
  a.backend().gemm(g);
}

// A shared B under a contiguous batch is one tall GEMM: the batch folded into the rows. (A transposed a
// with a shared b has batch 1, so folding changes nothing there.)
MatmulPlan fold(MatmulPlan p) {
  if (p.broadcast_b) p = {1, p.batch * p.m, p.n, p.k, true};
  return p;
}

struct MatmulBackward final : Node {
  SavedTensor a, b;
  Shape a_shape, b_shape;
  MatmulPlan plan;
  bool trans_a = false, trans_b = false;
  const char* name() const override { return "MatmulBackward"; }

  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gc = grads[0];
    Tensor as = a.unpack(name()), bs = b.unpack(name());
    Tensor ga, gb;
    // Shapes of the stored operands: A is [m, k] ([k, m] if trans_a), B is [k, n] ([n, k] if trans_b).
    const MatmulPlan& p = plan;
    if (needs_input_grad(0)) {
      ga = Tensor::empty(a_shape, gc.device());
      if (!trans_a)  // dA = dC op(B)^T : [m, n] x [n, k], a shared B as one tall GEMM as in the forward
        run_gemm(gc, bs, ga.data(), fold({p.batch, p.m, p.k, p.n, p.broadcast_b}), false, !trans_b);
      else  // stored A^T is [k, m]: dA^T = op(B) dC^T : [k, n] x [n, m] (batch 1 when B is shared)
        run_gemm(bs, gc, ga.data(), {p.batch, p.k, p.m, p.n}, trans_b, true);
    }
    if (needs_input_grad(1)) {
      gb = Tensor::empty(b_shape, gc.device());
      // A shared B receives the sum over the batch: the batch folded into the rows of one GEMM.
      const MatmulPlan f = fold(p);
      if (!trans_b)  // dB = op(A)^T dC : [k, rows] x [rows, n]
        run_gemm(as, gc, gb.data(), {f.batch, p.k, p.n, f.m}, !trans_a, false);
      else  // stored B^T is [n, k]: dB^T = dC^T op(A) : [n, rows] x [rows, k]
        run_gemm(gc, as, gb.data(), {f.batch, p.n, p.k, f.m}, true, trans_a);
    }
    return {ga, gb};
  }
  void release_saved() override { release_all(a, b); }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
  detail::check_f32("matmul", a, "a");
  detail::check_f32("matmul", b, "b");
  detail::check_same_device("matmul", a, b);
  detail::check_rank_at_least("matmul", a, 2, "a");
  detail::check_rank_at_least("matmul", b, 2, "b");
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  MatmulPlan p;
  p.m = trans_a ? sa[-1] : sa[-2];
  const int64_t ka = trans_a ? sa[-2] : sa[-1];
  p.k = trans_b ? sb[-1] : sb[-2];
  p.n = trans_b ? sb[-2] : sb[-1];
  GTPO_CHECK(ka == p.k, "matmul: inner dimensions differ: a ", sa, (trans_a ? " (transposed)" : ""), " and b ", sb,
             (trans_b ? " (transposed)" : ""), " give ", ka, " vs ", p.k);
  std::vector<int64_t> out_dims(sa.dims().begin(), sa.dims().end() - 2);
  if (sb.rank() == 2) {
    p.broadcast_b = true;
    p.batch = sa.numel_range(0, sa.rank() - 2);
    // A shared weight's gradient folds the batch into GEMM rows, which needs a's rows contiguous.
    GTPO_CHECK(!trans_a || p.batch == 1, "matmul: a transposed batched a ", sa, " with a shared b ", sb,
               " is not supported; transpose explicitly");
  } else {
    GTPO_CHECK(sa.rank() == sb.rank(), "matmul: batched operands need the same rank, got a ", sa, " and b ", sb);
    for (int64_t i = 0; i < sa.rank() - 2; ++i)
      GTPO_CHECK(sa[i] == sb[i], "matmul: batch dimensions differ: a ", sa, " and b ", sb);
    p.batch = sa.numel_range(0, sa.rank() - 2);
  }
  out_dims.push_back(p.m);
  out_dims.push_back(p.n);
  Tensor c = Tensor::empty(Shape(out_dims), a.device());
  // Folding the batch into the rows lets decode (m = 1 per sequence) run as a matrix product instead of one
  // matrix-vector product per row.
  run_gemm(a, b, c.data(), fold(p), trans_a, trans_b);
  if (should_record({&a, &b})) {
    auto node = std::make_shared<MatmulBackward>();
    if (b.requires_grad()) node->a = SavedTensor(a);
    if (a.requires_grad()) node->b = SavedTensor(b);
    node->a_shape = a.shape();
    node->b_shape = b.shape();
    node->plan = p;
    node->trans_a = trans_a;
    node->trans_b = trans_b;
    attach_node(node, {&a, &b}, {&c});
  }
  return c;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  detail::check_defined("linear", x, "x");
  detail::check_defined("linear", weight, "weight");
  GTPO_CHECK(weight.rank() == 2, "linear: weight must be [out, in], got ", weight.describe());
  GTPO_CHECK(x.rank() >= 1 && x.size(-1) == weight.size(1), "linear: input ", x.describe(),
             " does not end in the weight's in-features ", weight.size(1));
  Tensor x2 = x.rank() == 1 ? reshape(x, Shape{1, x.size(0)}) : x;
  Tensor y = matmul(x2, weight, false, true);
  if (x.rank() == 1) y = reshape(y, Shape{weight.size(0)});
  if (bias.defined()) y = add(y, bias);
  return y;
}

PreparedWeight prepare_weight(const Tensor& weight) {
  detail::check_f32("prepare_weight", weight, "weight");
  GTPO_CHECK(weight.rank() == 2, "prepare_weight: weight must be [out, in], got ", weight.describe());
  PreparedWeight p;
  p.out = weight.size(0);
  p.in = weight.size(1);
  p.width = weight.backend().gemm_b_panel_width(p.in, p.out);
  const Tensor w = weight.detach();
  if (p.width == 0 || p.out == 0 || p.in == 0) {
    p.width = 0;
    p.data = w;
    return p;
  }
  const int64_t panels = (p.out + p.width - 1) / p.width;
  const Tensor padded =
      panels * p.width == p.out ? w : concat({w, Tensor::zeros(Shape{panels * p.width - p.out, p.in}, w.device())}, 0);
  p.data = permute(reshape(padded, Shape{panels, p.width, p.in}), {0, 2, 1});  // [panels, in, width]
  return p;
}

Tensor linear(const Tensor& x, const PreparedWeight& w, const Tensor& bias) {
  if (w.width == 0) return linear(x, w.data, bias);
  detail::check_f32("linear", x, "x");
  detail::check_same_device("linear", x, w.data);
  GTPO_CHECK(x.rank() >= 1 && x.size(-1) == w.in, "linear: input ", x.describe(),
             " does not end in the prepared weight's in-features ", w.in);
  GTPO_CHECK(!should_record({&x}), "linear: a prepared weight records no gradient; call it under NoGradGuard");
  std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
  dims.back() = w.out;
  Tensor y = Tensor::empty(Shape(dims), x.device());
  // One batched product over the whole panels, the panel as the batch entry (A shared, C's columns
  // [e * width, (e + 1) * width) for entry e), then the last, partial panel on its own.
  GemmArgs g;
  g.m = x.numel() / w.in;
  g.k = w.in;
  g.a = x.data();
  g.lda = w.in;
  g.stride_a = 0;
  g.b = w.data.data();
  g.ldb = w.width;
  g.stride_b = w.in * w.width;
  g.c = y.data();
  g.ldc = w.out;
  g.stride_c = w.width;
  const int64_t whole = w.out / w.width, rest = w.out % w.width;
  if (g.m > 0 && whole > 0) {
    g.n = w.width;
    g.batch = whole;
    x.backend().gemm(g);
  }
  if (g.m > 0 && rest > 0) {
    g.n = rest;
    g.batch = 1;
    g.b += whole * g.stride_b;
    g.c += whole * w.width;
    x.backend().gemm(g);
  }
  return bias.defined() ? add(y, bias) : y;
}

}  // namespace gtpo::ops
