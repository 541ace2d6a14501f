// ParameterStore: the trainable tensors of a model, each under a unique dotted name.
//
// Names follow the PyTorch/HF convention ("model.layers.0.self_attn.q_proj.weight") so that checkpoints
// and optimiser state can be saved and loaded by name. Parameters are kept in registration order, and
// everything that walks them (optimiser steps, gradient norms) uses that order, which keeps the
// floating-point reductions over parameters reproducible.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::optim {

struct Parameter {
  std::string name;
  Tensor tensor;
  // Whether AdamW applies decoupled weight decay to this parameter.
  bool weight_decay = true;
};

class ParameterStore {
 public:
  // Registers a leaf f32 tensor under a new name and marks it as requiring grad. The store shares the
  // tensor (no copy): the model keeps using the same handle. Weight decay defaults to on for tensors of
  // rank >= 2 (matrices, embeddings) and off for rank <= 1 (biases, norm gains), the usual GPT recipe:
  // decaying a norm gain towards 0 or a bias towards 0 regularises nothing useful.
  // Rejects a duplicate name and a tensor whose memory overlaps an already registered one (a tied
  // weight is registered once, under one name). Returns the tensor, for `w = store.add("w", init)`.
  Tensor add(const std::string& name, const Tensor& tensor);
  Tensor add(const std::string& name, const Tensor& tensor, bool weight_decay);

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Lookup by name; an unknown name throws gtpo::Error listing a few valid names.
  Tensor get(const std::string& name) const { return entry(name).tensor; }
  const Parameter& entry(const std::string& name) const;
  size_t index_of(const std::string& name) const;

  bool weight_decay(const std::string& name) const { return entry(name).weight_decay; }

  // Registration order.
  const std::vector<Parameter>& parameters() const { return params_; }
  std::vector<Parameter>::const_iterator begin() const { return params_.begin(); }
  std::vector<Parameter>::const_iterator end() const { return params_.end(); }
  size_t size() const { return params_.size(); }
  bool empty() const { return params_.empty(); }
  std::vector<std::string> names() const;

  // Total number of elements over all parameters.
  int64_t numel() const;
  // Drops every parameter's accumulated gradient (the next backward starts from nothing).
  void zero_grad() const;

 private:
  std::vector<Parameter> params_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace gtpo::optim
