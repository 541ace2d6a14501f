#include "runtime/ops/rope.h"

#include <cmath>

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

// out [B, T, H, D] = R(pos) x  ->  gx = R(pos)^T gout = R(-pos) gout (a rotation is orthogonal).
struct RopeBackward final : Node {
  SavedTensor positions;
  Shape x_shape;
  RopeFrequencies freq;
  const char* name() const override { return "RopeBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    Tensor pos = positions.unpack(name());
    Tensor gx = Tensor::empty(x_shape, gy.device());
    gy.backend().rope(gy.data(), pos.data_i32(), gx.data(), x_shape[0] * x_shape[1], x_shape[2], x_shape[3], freq,
                      true);
    return {gx};
  }
  void release_saved() override { positions.reset(); }
};

}  // namespace

Tensor rope(const Tensor& x, const Tensor& positions, const RopeFrequencies& freq) {
  detail::check_f32("rope", x, "x");
  detail::check_i32("rope", positions, "positions");
  detail::check_same_device("rope", x, positions);
  GTPO_CHECK(x.rank() == 4, "rope: x must be [B, T, H, D], got ", x.describe());
  const Shape& s = x.shape();
  GTPO_CHECK(s[3] % 2 == 0, "rope: head dim D must be even to split into pairs (d, d + D/2), got D=", s[3],
             " in x ", s);
  GTPO_CHECK(positions.shape() == Shape({s[0], s[1]}), "rope: positions must be [B, T] = [", s[0], ", ", s[1],
             "] to match x ", s, ", got ", positions.describe());
  GTPO_CHECK(std::isfinite(freq.theta) && freq.theta > 0.0f, "rope: theta must be a positive finite base, got ",
             freq.theta);
  GTPO_CHECK(freq.scaling == RopeScaling::none || (std::isfinite(freq.factor) && freq.factor > 0.0),
             "rope: the scaling factor must be a positive finite number, got ", freq.factor);

  Tensor out = Tensor::empty(s, x.device());
  x.backend().rope(x.data(), positions.data_i32(), out.data(), s[0] * s[1], s[2], s[3], freq, false);
  if (should_record({&x})) {
    auto node = std::make_shared<RopeBackward>();
    node->positions = SavedTensor(positions);
    node->x_shape = s;
    node->freq = freq;
    attach_node(node, {&x}, {&out});
  }
  return out;
}

}  // namespace gtpo::ops
