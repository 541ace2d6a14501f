#include "runtime/ops/reshape.h"

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {
struct ReshapeBackward final : Node {
  Shape x_shape;
  const char* name() const override { return "ReshapeBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override { return {grads[0].view(x_shape)}; }
};

Shape resolve(const Tensor& x, const Shape& requested) {
  std::vector<int64_t> dims = requested.dims();
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      GTPO_CHECK(infer < 0, "reshape: more than one -1 in ", requested);
      infer = static_cast<int64_t>(i);
    } else {
      GTPO_CHECK(dims[i] >= 0, "reshape: negative dimension in ", requested);
      known *= dims[i];
    }
  }
  if (infer >= 0) {
    GTPO_CHECK(known > 0 && x.numel() % known == 0, "reshape: cannot reshape ", x.describe(), " to ", requested);
    dims[static_cast<size_t>(infer)] = x.numel() / known;
  }
  Shape out(dims);
  GTPO_CHECK(out.numel() == x.numel(), "reshape: cannot reshape ", x.describe(), " (", x.numel(),
             " elements) to ", requested, " (", out.numel(), " elements)");
  return out;
}
}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) {
  detail::check_defined("reshape", x, "x");
  Tensor y = x.view(resolve(x, shape));
  if (should_record({&x})) {
    auto node = std::make_shared<ReshapeBackward>();
    node->x_shape = x.shape();
    attach_node(node, {&x}, {&y});
  }
  return y;
}

}  // namespace gtpo::ops
