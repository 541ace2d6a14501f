// Dynamic reverse-mode autograd: nodes, edges, saved tensors, grad mode and the backward engine.
//
// An op that runs with grad mode on and an input that requires grad records a Node. The node holds
// only what its backward needs (SavedTensor, version-checked) and one Edge per input pointing at the
// node that produced that input (or at the input leaf's AccumulateGrad). backward() walks the graph in
// reverse creation order, sums the gradients that meet at a node, and frees each node's saved state
// as soon as the node has run.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo {

struct Edge {
  std::shared_ptr<Node> node;  // null when that input needs no gradient
  int input_nr = 0;            // which output of `node` the input was
};

class Node {
 public:
  Node();
  virtual ~Node() = default;
  virtual const char* name() const = 0;
  // grad_outputs has num_outputs entries (undefined for outputs that received no gradient); returns one
  // gradient per input edge (undefined where none is needed).
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) = 0;
  // Drops saved tensors; called right after apply unless the graph is retained.
  virtual void release_saved() {}

  // True when input i needs a gradient; ops use it to skip work (the grad_input_mask idea).
  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].node != nullptr; }

  std::vector<Edge> next_edges;
  int num_outputs = 1;
  uint64_t sequence_nr;
};

// Accumulates the gradient into a leaf tensor's .grad.
class AccumulateGrad final : public Node {
 public:
  explicit AccumulateGrad(std::weak_ptr<TensorImpl> leaf) : leaf_(std::move(leaf)) {}
  const char* name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grad_outputs) override;

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

// A tensor saved for backward together with the storage version at save time, so that an in-place
// write between forward and backward is reported instead of silently giving a wrong gradient.
class SavedTensor {
 public:
  SavedTensor() = default;
  explicit SavedTensor(const Tensor& t);
  Tensor unpack(const char* node_name) const;
  void reset() { data_ = Tensor(); }
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_;
  uint32_t version_ = 0;
};

// A node's release_saved in one line: every saved value given (SavedTensor or Tensor) back to empty.
template <typename... Saved>
void release_all(Saved&... saved) {
  ((saved = Saved()), ...);
}

// Grad mode is thread-local, as in PyTorch: rollouts and evaluation switch it off with NoGradGuard.
bool grad_mode_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// True when an op over these inputs must record a node.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
inline bool should_record(std::initializer_list<const Tensor*> inputs) {
  return grad_mode_enabled() && any_requires_grad(inputs);
}

// The edge a gradient for `t` should flow into (creating the leaf's AccumulateGrad if needed).
Edge gradient_edge(const Tensor& t);

// Wires a freshly made node: edges to the inputs, and the node as grad_fn of each output.
void attach_node(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs,
                 std::initializer_list<const Tensor*> outputs);
void attach_node(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
                 const std::vector<Tensor>& outputs);

// Runs reverse mode from roots with their seed gradients.
void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds, bool retain_graph);

}  // namespace gtpo
