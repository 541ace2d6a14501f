#include "runtime/ops/reduce.h"

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

// x [outer, len, inner] -> y [outer, inner], y = scale * sum over len.
struct ReduceSumBackward final : Node {
  Shape x_shape;
  int64_t outer = 0, len = 0, inner = 0;
  float scale = 1.0f;
  const char* name() const override { return "ReduceSumBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    // dx[o, l, i] = scale * dy[o, i]
    Tensor gx = Tensor::empty(x_shape, grads[0].device());
    grads[0].backend().expand_axis(grads[0].data(), gx.data(), outer, len, inner, scale);
    return {gx};
  }
};

Tensor reduce(const char* op, const Tensor& x, int64_t outer, int64_t len, int64_t inner, float scale,
              const Shape& out_shape) {
  Tensor y = Tensor::empty(out_shape, x.device());
  x.backend().reduce_sum(x.data(), y.data(), outer, len, inner, scale);
  if (should_record({&x})) {
    auto node = std::make_shared<ReduceSumBackward>();
    node->x_shape = x.shape();
    node->outer = outer;
    node->len = len;
    node->inner = inner;
    node->scale = scale;
    attach_node(node, {&x}, {&y});
  }
  (void)op;
  return y;
}

Tensor reduce_axis(const char* op, const Tensor& x, int64_t axis, bool keepdim, bool average) {
  detail::check_f32(op, x, "x");
  const Shape& s = x.shape();
  const int64_t a = s.normalize_axis(axis);
  GTPO_CHECK(a >= 0 && a < s.rank(), op, ": axis ", axis, " is out of range for shape ", s);
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < s.rank(); ++i)
    if (i != a)
      dims.push_back(s[i]);
    else if (keepdim)
      dims.push_back(1);
  const int64_t len = s[a];
  const float scale = average ? (len > 0 ? 1.0f / static_cast<float>(len) : 0.0f) : 1.0f;
  return reduce(op, x, s.numel_range(0, a), len, s.numel_range(a + 1, s.rank()), scale, Shape(dims));
}

}  // namespace

Tensor sum(const Tensor& x, int64_t axis, bool keepdim) { return reduce_axis("sum", x, axis, keepdim, false); }
Tensor mean(const Tensor& x, int64_t axis, bool keepdim) { return reduce_axis("mean", x, axis, keepdim, true); }

Tensor sum_all(const Tensor& x) {
  detail::check_f32("sum_all", x, "x");
  return reduce("sum_all", x, 1, x.numel(), 1, 1.0f, Shape{});
}

Tensor mean_all(const Tensor& x) {
  detail::check_f32("mean_all", x, "x");
  const float scale = x.numel() > 0 ? 1.0f / static_cast<float>(x.numel()) : 0.0f;
  return reduce("mean_all", x, 1, x.numel(), 1, scale, Shape{});
}

}  // namespace gtpo::ops
