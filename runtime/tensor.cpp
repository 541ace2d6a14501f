#include "runtime/tensor.h"

#include <cstring>

#include "runtime/autograd.h"
#include "runtime/backend.h"
#include "runtime/error.h"

namespace gtpo {

Storage::Storage(Device dev, size_t n_bytes) : device(dev), bytes(n_bytes) {
  data = backend_for(device).allocate(bytes);
}

Storage::~Storage() {
  if (data) backend_for(device).deallocate(data, bytes);
}

namespace {
std::shared_ptr<TensorImpl> make_impl(const Shape& shape, Device device, DType dtype) {
  for (int64_t d : shape.dims()) GTPO_CHECK(d >= 0, "tensor: negative dimension in shape ", shape);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(device, static_cast<size_t>(shape.numel()) * dtype_size(dtype));
  impl->shape = shape;
  impl->dtype = dtype;
  return impl;
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, Device device, DType dtype) { return Tensor(make_impl(shape, device, dtype)); }

Tensor Tensor::zeros(const Shape& shape, Device device, DType dtype) {
  Tensor t = empty(shape, device, dtype);
  if (dtype == DType::i32)
    t.backend().fill_i32(t.data_i32(), 0, t.numel());
  else
    t.fill_(0.0f);
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = empty(shape, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, Device device) {
  GTPO_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
             " values do not fill shape ", shape);
  Tensor t = empty(shape, device);
  t.backend().copy_from_host(t.raw_data(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::from_ints(const std::vector<int32_t>& values, const Shape& shape, Device device) {
  GTPO_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_ints: ", values.size(),
             " values do not fill shape ", shape);
  Tensor t = empty(shape, device, DType::i32);
  t.backend().copy_from_host(t.raw_data(), values.data(), values.size() * sizeof(int32_t));
  return t;
}

void Tensor::check_defined(const char* what) const {
  GTPO_CHECK(impl_ != nullptr, what, ": the tensor is undefined");
}

const Shape& Tensor::shape() const {
  check_defined("shape");
  return impl_->shape;
}

int64_t Tensor::size(int64_t axis) const {
  const Shape& s = shape();
  const int64_t a = s.normalize_axis(axis);
  GTPO_CHECK(a >= 0 && a < s.rank(), "size: axis ", axis, " is out of range for shape ", s);
  return s[a];
}

DType Tensor::dtype() const {
  check_defined("dtype");
  return impl_->dtype;
}

Device Tensor::device() const {
  check_defined("device");
  return impl_->storage->device;
}

Backend& Tensor::backend() const { return backend_for(device()); }

std::string Tensor::describe() const {
  if (!impl_) return "undefined tensor";
  return std::string(dtype_name(dtype())) + shape().str() + " on " + device_name(device());
}

void* Tensor::raw_data() const {
  check_defined("data");
  return static_cast<char*>(impl_->storage->data) + impl_->offset * static_cast<int64_t>(dtype_size(impl_->dtype));
}

float* Tensor::data() const {
  GTPO_CHECK(dtype() == DType::f32, "data: expected an f32 tensor, got ", describe());
  return static_cast<float*>(raw_data());
}

int32_t* Tensor::data_i32() const {
  GTPO_CHECK(dtype() == DType::i32, "data_i32: expected an i32 tensor, got ", describe());
  return static_cast<int32_t*>(raw_data());
}

void* Tensor::mutable_raw_data() const {
  void* p = raw_data();
  impl_->storage->version++;
  return p;
}

float* Tensor::mutable_data() const {
  float* p = data();
  impl_->storage->version++;
  return p;
}

std::vector<float> Tensor::to_vector() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  backend().copy_to_host(out.data(), data(), out.size() * sizeof(float));
  return out;
}

std::vector<int32_t> Tensor::to_int_vector() const {
  std::vector<int32_t> out(static_cast<size_t>(numel()));
  backend().copy_to_host(out.data(), data_i32(), out.size() * sizeof(int32_t));
  return out;
}

float Tensor::item() const {
  GTPO_CHECK(numel() == 1, "item: expected a one-element tensor, got ", describe());
  return to_vector()[0];
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  Tensor out = empty(shape(), target, dtype());
  out.copy_(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = empty(shape(), device(), dtype());
  backend().copy(out.raw_data(), raw_data(), static_cast<size_t>(numel()) * dtype_size(dtype()));
  return out;
}

Tensor Tensor::detach() const {
  check_defined("detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = impl_->shape;
  impl->dtype = impl_->dtype;
  return Tensor(impl);
}

Tensor Tensor::view(const Shape& new_shape) const {
  GTPO_CHECK(new_shape.numel() == numel(), "view: cannot view ", describe(), " as shape ", new_shape);
  Tensor out = detach();
  out.impl_->shape = new_shape;
  return out;
}

void Tensor::fill_(float value) const {
  GTPO_CHECK(dtype() == DType::f32, "fill_: expected an f32 tensor, got ", describe());
  backend().fill(mutable_data(), value, numel());
}

void Tensor::copy_(const Tensor& src) const {
  GTPO_CHECK(src.shape() == shape() && src.dtype() == dtype(), "copy_: source ", src.describe(),
             " does not match destination ", describe());
  const size_t bytes = static_cast<size_t>(numel()) * dtype_size(dtype());
  void* dst = mutable_raw_data();
  if (src.device() == device())
    backend().copy(dst, src.raw_data(), bytes);
  else if (src.device() == Device::cpu)
    backend().copy_from_host(dst, src.raw_data(), bytes);
  else
    src.backend().copy_to_host(dst, src.raw_data(), bytes);
}

const Tensor& Tensor::set_requires_grad(bool flag) const {
  check_defined("set_requires_grad");
  GTPO_CHECK(!flag || dtype() == DType::f32, "set_requires_grad: only f32 tensors can require grad, got ",
             describe());
  GTPO_CHECK(is_leaf(), "set_requires_grad: only leaf tensors can be marked; this one was computed by ",
             "an op (use detach() first)");
  impl_->requires_grad = flag;
  return *this;
}

Tensor Tensor::grad() const {
  check_defined("grad");
  return impl_->grad ? Tensor(impl_->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  check_defined("set_grad");
  if (g.defined())
    GTPO_CHECK(g.shape() == shape(), "set_grad: gradient ", g.describe(), " does not match ", describe());
  impl_->grad = g.impl_ptr();
}

void Tensor::zero_grad() const {
  check_defined("zero_grad");
  impl_->grad.reset();
}

void Tensor::backward(const Tensor& seed, bool retain_graph) const {
  check_defined("backward");
  GTPO_CHECK(requires_grad(), "backward: this tensor does not require grad (no parameter reached it, ",
             "or it was computed under NoGradGuard)");
  Tensor s = seed;
  if (!s.defined()) {
    GTPO_CHECK(numel() == 1, "backward: a non-scalar ", describe(), " needs an explicit seed gradient");
    s = full(shape(), 1.0f, device());
  }
  GTPO_CHECK(s.shape() == shape(), "backward: seed ", s.describe(), " does not match ", describe());
  run_backward({*this}, {s}, retain_graph);
}

bool Tensor::same_storage(const Tensor& other) const {
  return impl_ && other.impl_ && impl_->storage == other.impl_->storage;
}

}  // namespace gtpo
