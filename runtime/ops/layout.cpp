#include "runtime/ops/layout.h"

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

using detail::check_defined;
using detail::check_f32;

namespace {

int64_t resolve_axis(const char* op, const Shape& shape, int64_t axis) {
  const int64_t a = shape.normalize_axis(axis);
  GTPO_CHECK(a >= 0 && a < shape.rank(), op, ": axis ", axis, " is out of range for shape ", shape);
  return a;
}

void check_copyable(const char* op, const Tensor& t, const char* arg) {
  check_defined(op, t, arg);
  GTPO_CHECK(t.dtype() == DType::f32 || t.dtype() == DType::i32, op, ": argument '", arg,
             "' must be f32 or i32, got ", t.describe());
}

// Strided block copy; skips empty blocks (their pointers may be null).
void copy_block(Backend& be, void* dst, int64_t dst_stride, const void* src, int64_t src_stride, int64_t rows,
                int64_t cols, size_t elem) {
  if (rows > 0 && cols > 0) be.copy_2d(dst, dst_stride, src, src_stride, rows, cols, elem);
}

// x viewed as [outer, size, inner] around `axis`.
struct AxisSplit {
  int64_t outer = 1, size = 0, inner = 1;
};
AxisSplit axis_split(const Shape& s, int64_t a) { return {s.numel_range(0, a), s[a], s.numel_range(a + 1, s.rank())}; }

// Elements [begin, begin + len) along the axis of x, as a view when that range is contiguous in x.
Tensor take_range(const Tensor& x, int64_t a, const AxisSplit& g, int64_t begin, int64_t len) {
  std::vector<int64_t> dims = x.shape().dims();
  dims[static_cast<size_t>(a)] = len;
  const Shape out_shape(dims);
  if (g.outer == 1 || len == g.size) {
    Tensor v = x.detach();
    v.impl()->offset += begin * g.inner;
    v.impl()->shape = out_shape;
    return v;
  }
  Tensor out = Tensor::empty(out_shape, x.device(), x.dtype());
  const size_t elem = dtype_size(x.dtype());
  copy_block(x.backend(), out.raw_data(), len * g.inner,
             static_cast<const char*>(x.raw_data()) + static_cast<size_t>(begin * g.inner) * elem, g.size * g.inner,
             g.outer, len * g.inner, elem);
  return out;
}

// Writes src [outer, len, inner] into dst [outer, size, inner] at begin along the middle axis.
void place_range(const Tensor& dst, const AxisSplit& g, int64_t begin, int64_t len, const Tensor& src) {
  const size_t elem = dtype_size(dst.dtype());
  copy_block(dst.backend(), static_cast<char*>(dst.raw_data()) + static_cast<size_t>(begin * g.inner) * elem,
             g.size * g.inner, src.raw_data(), len * g.inner, g.outer, len * g.inner, elem);
}

// ---- permute ---------------------------------------------------------------------------------------

Tensor permute_raw(const Tensor& x, const std::vector<int64_t>& perm) {
  const Shape& s = x.shape();
  std::vector<int64_t> dims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) dims[i] = s[perm[i]];
  Tensor out = Tensor::empty(Shape(dims), x.device());
  if (out.numel() > 0) x.backend().permute(x.data(), out.data(), s.dims(), perm);
  return out;
}

// y = x permuted by perm; gx = gy permuted by the inverse permutation.
struct PermuteBackward final : Node {
  std::vector<int64_t> inverse;
  const char* name() const override { return "PermuteBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override { return {permute_raw(grads[0], inverse)}; }
};

// ---- slice and split -------------------------------------------------------------------------------

// One node for slice (one output) and split (one output per piece): scatters each piece's gradient back
// into x's layout; pieces without a gradient leave zeros.
struct SliceBackward final : Node {
  Shape x_shape;
  AxisSplit g;
  std::vector<int64_t> begins, lens;
  const char* name() const override { return "SliceBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    bool all_defined = true;
    int64_t covered = 0;
    for (size_t i = 0; i < lens.size(); ++i) {
      all_defined = all_defined && grads[i].defined();
      if (grads[i].defined()) covered += lens[i];
    }
    Device device = Device::cpu;
    for (const Tensor& t : grads)
      if (t.defined()) device = t.device();
    // Every element is written when the defined pieces tile the whole axis: no need to zero first.
    Tensor gx = (all_defined && covered == g.size) ? Tensor::empty(x_shape, device) : Tensor::zeros(x_shape, device);
    for (size_t i = 0; i < lens.size(); ++i)
      if (grads[i].defined()) place_range(gx, g, begins[i], lens[i], grads[i]);
    return {gx};
  }
};

}  // namespace

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  check_f32("permute", x, "x");
  const Shape& s = x.shape();
  GTPO_CHECK(static_cast<int64_t>(perm.size()) == s.rank(), "permute: perm has ", perm.size(),
             " entries but x is ", x.describe());
  GTPO_CHECK(s.rank() <= 8, "permute: rank ", s.rank(), " is above the supported 8 (", x.describe(), ")");
  std::vector<int64_t> p(perm.size()), inverse(perm.size(), -1);
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t a = s.normalize_axis(perm[i]);
    GTPO_CHECK(a >= 0 && a < s.rank(), "permute: entry ", perm[i], " is out of range for shape ", s);
    GTPO_CHECK(inverse[static_cast<size_t>(a)] < 0, "permute: axis ", a, " appears twice in the permutation");
    p[i] = a;
    inverse[static_cast<size_t>(a)] = static_cast<int64_t>(i);
  }
  Tensor y = permute_raw(x, p);
  if (should_record({&x})) {
    auto node = std::make_shared<PermuteBackward>();
    node->inverse = inverse;
    attach_node(node, {&x}, {&y});
  }
  return y;
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  check_f32("transpose", x, "x");
  const int64_t a = resolve_axis("transpose", x.shape(), dim0);
  const int64_t b = resolve_axis("transpose", x.shape(), dim1);
  std::vector<int64_t> perm(static_cast<size_t>(x.rank()));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
  return permute(x, perm);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t begin, int64_t end) {
  check_copyable("slice", x, "x");
  const int64_t a = resolve_axis("slice", x.shape(), axis);
  const AxisSplit g = axis_split(x.shape(), a);
  const int64_t b = begin < 0 ? begin + g.size : begin;
  const int64_t e = end < 0 ? end + g.size : end;
  GTPO_CHECK(0 <= b && b <= e && e <= g.size, "slice: range [", begin, ", ", end, ") is out of bounds for axis ",
             axis, " of size ", g.size, " (", x.describe(), ")");
  Tensor y = take_range(x, a, g, b, e - b);
  if (should_record({&x})) {
    auto node = std::make_shared<SliceBackward>();
    node->x_shape = x.shape();
    node->g = g;
    node->begins = {b};
    node->lens = {e - b};
    attach_node(node, {&x}, {&y});
  }
  return y;
}

std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  check_copyable("split", x, "x");
  const int64_t a = resolve_axis("split", x.shape(), axis);
  const AxisSplit g = axis_split(x.shape(), a);
  GTPO_CHECK(!sizes.empty(), "split: no sizes given for ", x.describe());
  int64_t total = 0;
  for (int64_t n : sizes) {
    GTPO_CHECK(n >= 0, "split: negative size ", n, " for ", x.describe());
    total += n;
  }
  GTPO_CHECK(total == g.size, "split: sizes sum to ", total, " but axis ", axis, " of ", x.describe(), " has size ",
             g.size);
  std::vector<Tensor> pieces;
  std::vector<int64_t> begins;
  int64_t at = 0;
  for (int64_t n : sizes) {
    pieces.push_back(take_range(x, a, g, at, n));
    begins.push_back(at);
    at += n;
  }
  if (should_record({&x})) {
    auto node = std::make_shared<SliceBackward>();
    node->x_shape = x.shape();
    node->g = g;
    node->begins = begins;
    node->lens = sizes;
    attach_node(node, std::vector<Tensor>{x}, pieces);
  }
  return pieces;
}

namespace {
// y [outer, sum(len_i), inner] from x_i [outer, len_i, inner]; gx_i is the matching block of gy.
struct ConcatBackward final : Node {
  AxisSplit g;  // of the output
  std::vector<Shape> shapes;
  std::vector<int64_t> begins, lens;
  const char* name() const override { return "ConcatBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    std::vector<Tensor> out(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i) {
      if (!needs_input_grad(i)) continue;
      out[i] = Tensor::empty(shapes[i], gy.device());
      copy_block(gy.backend(), out[i].raw_data(), lens[i] * g.inner,
                 gy.data() + begins[i] * g.inner, g.size * g.inner, g.outer, lens[i] * g.inner, sizeof(float));
    }
    return out;
  }
};
}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  GTPO_CHECK(!xs.empty(), "concat: no tensors given");
  for (size_t i = 0; i < xs.size(); ++i) check_copyable("concat", xs[i], "xs");
  const Tensor& first = xs[0];
  const int64_t a = resolve_axis("concat", first.shape(), axis);
  std::vector<int64_t> dims = first.shape().dims();
  int64_t total = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    GTPO_CHECK(t.dtype() == first.dtype() && t.device() == first.device(), "concat: tensor ", i, " is ",
               t.describe(), " but tensor 0 is ", first.describe());
    bool same = t.rank() == first.rank();
    for (int64_t d = 0; same && d < t.rank(); ++d) same = d == a || t.size(d) == first.size(d);
    GTPO_CHECK(same, "concat: tensor ", i, " has shape ", t.shape(), " but tensor 0 has shape ", first.shape(),
               "; all dims but axis ", axis, " must agree");
    total += t.size(a);
  }
  dims[static_cast<size_t>(a)] = total;
  Tensor y = Tensor::empty(Shape(dims), first.device(), first.dtype());
  const AxisSplit g = axis_split(y.shape(), a);
  std::vector<int64_t> begins;
  int64_t at = 0;
  for (const Tensor& t : xs) {
    place_range(y, g, at, t.size(a), t);
    begins.push_back(at);
    at += t.size(a);
  }
  bool record = grad_mode_enabled();
  if (record) {
    record = false;
    for (const Tensor& t : xs) record = record || t.requires_grad();
  }
  if (record) {
    auto node = std::make_shared<ConcatBackward>();
    node->g = g;
    for (const Tensor& t : xs) node->shapes.push_back(t.shape());
    node->begins = begins;
    for (const Tensor& t : xs) node->lens.push_back(t.size(a));
    attach_node(node, xs, std::vector<Tensor>{y});
  }
  return y;
}

// dst [Bd, C, F...] <- src [Bs, T, F...] at [at, at + T): one strided copy, or one per entry with ROWS.
void write_positions(const Tensor& dst, const Tensor& src, int64_t at, const std::vector<int32_t>& rows) {
  GTPO_CHECK(dst.dtype() == DType::f32 && src.dtype() == DType::f32 && dst.device() == src.device() &&
                 dst.rank() >= 2 && src.rank() == dst.rank(),
             "write_positions: dst ", dst.describe(), " and src ", src.describe(), " do not match");
  for (int64_t d = 2; d < dst.rank(); ++d)
    GTPO_CHECK(dst.size(d) == src.size(d), "write_positions: dst ", dst.describe(), " and src ",
               src.describe(), " differ past axis 1");
  const int64_t B = src.size(0), T = src.size(1), C = dst.size(1), row = dst.numel() / (dst.size(0) * C);
  GTPO_CHECK(at >= 0 && at + T <= C, "write_positions: positions [", at, ", ", at + T, ") exceed the ", C,
             " of dst");
  GTPO_CHECK(!dst.requires_grad(), "write_positions: dst requires a gradient; this write is not recorded");
  GTPO_CHECK(rows.empty() ? B <= dst.size(0) : static_cast<int64_t>(rows.size()) == B, "write_positions: ", B,
             " src entries for ", rows.empty() ? dst.size(0) : rows.size(), " rows");
  float* base = dst.mutable_data() + at * row;
  if (rows.empty()) {
    dst.backend().copy_2d(base, C * row, src.data(), T * row, B, T * row, sizeof(float));
    return;
  }
  for (int64_t b = 0; b < B; ++b) {
    const int32_t r = rows[static_cast<std::size_t>(b)];
    GTPO_CHECK(r >= 0 && r < dst.size(0), "write_positions: row ", r, " outside dst's ", dst.size(0));
  }
  // One strided copy per run of consecutive rows (a decode batch loses only its finished rows).
  for (int64_t b = 0; b < B;) {
    int64_t end = b + 1;
    while (end < B && rows[static_cast<std::size_t>(end)] == rows[static_cast<std::size_t>(end - 1)] + 1)
      ++end;
    dst.backend().copy_2d(base + rows[static_cast<std::size_t>(b)] * C * row, C * row,
                          src.data() + b * T * row, T * row, end - b, T * row, sizeof(float));
    b = end;
  }
}

}  // namespace gtpo::ops
