// Tensor: a cheap, ref-counted handle to contiguous row-major data on one device, plus the autograd
// metadata that rides along when the tensor requires a gradient.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/dtype.h"
#include "runtime/shape.h"

namespace gtpo {

class Node;
class Backend;

// Device memory owned by one or more tensors. The version counter lets autograd detect in-place writes
// to data that a backward node saved.
struct Storage {
  Storage(Device device, size_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Device device;
  size_t bytes;
  void* data = nullptr;
  uint32_t version = 0;
};

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements, so that views share storage
  Shape shape;
  DType dtype = DType::f32;

  // Autograd: a leaf that requires grad accumulates into `grad`; a non-leaf points at the node that made it.
  bool requires_grad = false;
  std::shared_ptr<Node> grad_fn;
  int output_nr = 0;
  std::shared_ptr<TensorImpl> grad;
  std::weak_ptr<Node> grad_accumulator;  // shared by every use of a leaf in one graph
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- construction --------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, Device device = Device::cpu, DType dtype = DType::f32);
  static Tensor zeros(const Shape& shape, Device device = Device::cpu, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, float value, Device device = Device::cpu);
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape, Device device = Device::cpu);
  static Tensor from_ints(const std::vector<int32_t>& values, const Shape& shape, Device device = Device::cpu);
  static Tensor scalar(float value, Device device = Device::cpu) { return from_vector({value}, Shape{}, device); }

  // ---- metadata ------------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t rank() const { return shape().rank(); }
  int64_t size(int64_t axis) const;
  int64_t numel() const { return shape().numel(); }
  DType dtype() const;
  Device device() const;
  Backend& backend() const;
  std::string describe() const;  // "f32[2, 3] on cpu", for error messages

  // ---- data access (pointers are device pointers) --------------------------------------------
  void* raw_data() const;
  float* data() const;  // f32 only; checks the dtype
  int32_t* data_i32() const;
  std::vector<float> to_vector() const;  // copies to the host
  std::vector<int32_t> to_int_vector() const;
  float item() const;  // one-element tensors only
  // Pointers for writing in place: each call bumps the storage's version, so a graph that saved this
  // tensor for backward refuses to run on the overwritten values. Every in-place write outside the ops
  // (optimiser, grad clip, KV cache, sampler) goes through these; nothing bumps a version by hand.
  void* mutable_raw_data() const;
  float* mutable_data() const;

  // ---- copies and views (none of these record autograd) --------------------------------------
  Tensor to(Device device) const;
  Tensor clone() const;               // deep copy, detached
  Tensor detach() const;              // shares storage, no autograd history
  Tensor view(const Shape& shape) const;  // same storage, same numel, detached: use ops::reshape for autograd

  // ---- in-place (bumps the version; never tracked by autograd) --------------------------------
  void fill_(float value) const;
  void copy_(const Tensor& src) const;  // same shape and dtype; may cross devices

  // ---- autograd ------------------------------------------------------------------------------
  bool requires_grad() const { return impl_ && impl_->requires_grad; }
  // Marks a leaf as a parameter to differentiate with respect to.
  const Tensor& set_requires_grad(bool flag) const;
  bool is_leaf() const { return !impl_ || impl_->grad_fn == nullptr; }
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  void zero_grad() const;  // drops the accumulated gradient
  // Reverse-mode differentiation from this tensor. A non-scalar needs an explicit seed gradient.
  void backward(const Tensor& seed = Tensor(), bool retain_graph = false) const;

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same_storage(const Tensor& other) const;

 private:
  void check_defined(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

}  // namespace gtpo
