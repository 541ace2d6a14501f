#include "runtime/autograd.h"

#include <atomic>
#include <queue>
#include <unordered_map>

#include "runtime/backend.h"
#include "runtime/error.h"

namespace gtpo {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local bool grad_mode = true;

// grad += increment, elementwise, same shape.
void accumulate_into(Tensor& grad, const Tensor& increment) {
  if (!grad.defined()) {
    grad = increment;
    return;
  }
  GTPO_CHECK(grad.shape() == increment.shape(), "autograd: gradient shapes disagree: ", grad.describe(), " vs ",
             increment.describe());
  // A gradient tensor may be shared (an identity backward passes its input through), so never write
  // into it in place: sum into a fresh tensor.
  Tensor sum = Tensor::empty(grad.shape(), grad.device());
  grad.backend().binary(BinaryOp::add, grad.data(), increment.data(), sum.data(), {1, grad.numel()});
  grad = sum;
}
}  // namespace

Node::Node() : sequence_nr(next_sequence_nr++) {}

std::vector<Tensor> AccumulateGrad::apply(const std::vector<Tensor>& grad_outputs) {
  auto leaf = leaf_.lock();
  if (!leaf || !grad_outputs[0].defined()) return {};
  Tensor grad = leaf->grad ? Tensor(leaf->grad) : Tensor();
  if (!grad.defined()) {
    // Own the memory: the incoming gradient may alias another node's buffer.
    leaf->grad = grad_outputs[0].clone().impl_ptr();
  } else {
    grad.backend().binary(BinaryOp::add, grad.data(), grad_outputs[0].data(), grad.data(), {1, grad.numel()});
  }
  return {};
}

SavedTensor::SavedTensor(const Tensor& t) {
  if (!t.defined()) return;
  data_ = t.detach();
  version_ = t.impl()->storage->version;
}

Tensor SavedTensor::unpack(const char* node_name) const {
  if (data_.defined())
    GTPO_CHECK(data_.impl()->storage->version == version_, "autograd: a tensor saved by ", node_name,
               " was modified in place after it was saved (version ", version_, " -> ",
               data_.impl()->storage->version, "); its gradient would be wrong");
  return data_;
}

bool grad_mode_enabled() { return grad_mode; }

NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return {};
  TensorImpl* impl = t.impl();
  if (impl->grad_fn) return {impl->grad_fn, impl->output_nr};
  std::shared_ptr<Node> acc = impl->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    impl->grad_accumulator = acc;
  }
  return {acc, 0};
}

namespace {
void attach_impl(const std::shared_ptr<Node>& node, const std::vector<const Tensor*>& inputs,
                 const std::vector<const Tensor*>& outputs) {
  node->next_edges.clear();
  for (const Tensor* in : inputs) node->next_edges.push_back(in ? gradient_edge(*in) : Edge{});
  node->num_outputs = static_cast<int>(outputs.size());
  int nr = 0;
  for (const Tensor* out : outputs) {
    TensorImpl* impl = out->impl();
    impl->requires_grad = true;
    impl->grad_fn = node;
    impl->output_nr = nr++;
  }
}
}  // namespace

void attach_node(const std::shared_ptr<Node>& node, std::initializer_list<const Tensor*> inputs,
                 std::initializer_list<const Tensor*> outputs) {
  attach_impl(node, std::vector<const Tensor*>(inputs), std::vector<const Tensor*>(outputs));
}

void attach_node(const std::shared_ptr<Node>& node, const std::vector<Tensor>& inputs,
                 const std::vector<Tensor>& outputs) {
  std::vector<const Tensor*> in, out;
  for (const Tensor& t : inputs) in.push_back(&t);
  for (const Tensor& t : outputs) out.push_back(&t);
  attach_impl(node, in, out);
}

void run_backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& seeds, bool retain_graph) {
  NoGradGuard no_grad;  // gradient math itself is never recorded

  // Count, for every node reachable from the roots, how many edges lead into it.
  std::unordered_map<Node*, int> dependencies;
  std::vector<Node*> stack;
  for (const Tensor& r : roots) {
    Edge e = gradient_edge(r);
    if (e.node && !dependencies.count(e.node.get())) {
      dependencies[e.node.get()] = 0;
      stack.push_back(e.node.get());
    }
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    for (const Edge& e : node->next_edges) {
      if (!e.node) continue;
      auto [it, inserted] = dependencies.try_emplace(e.node.get(), 0);
      it->second++;
      if (inserted) stack.push_back(e.node.get());
    }
  }

  // Gradients waiting at each node, one slot per output.
  std::unordered_map<Node*, std::vector<Tensor>> pending;
  std::unordered_map<Node*, std::shared_ptr<Node>> keep_alive;
  auto compare = [](const Node* a, const Node* b) { return a->sequence_nr < b->sequence_nr; };
  // Latest-created first: a fixed order, so gradient sums are bitwise reproducible.
  std::priority_queue<Node*, std::vector<Node*>, decltype(compare)> ready(compare);

  for (size_t i = 0; i < roots.size(); ++i) {
    Edge e = gradient_edge(roots[i]);
    if (!e.node) continue;
    auto& slots = pending[e.node.get()];
    slots.resize(static_cast<size_t>(e.node->num_outputs));
    accumulate_into(slots[static_cast<size_t>(e.input_nr)], seeds[i]);
    if (!keep_alive.count(e.node.get())) {
      keep_alive[e.node.get()] = e.node;
      if (dependencies[e.node.get()] == 0) ready.push(e.node.get());
    }
  }

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(pending[node]);
    pending.erase(node);
    grads.resize(static_cast<size_t>(node->num_outputs));
    bool any_grad = false;
    for (const Tensor& g : grads) any_grad = any_grad || g.defined();
    // Nodes only see calls with at least one defined output gradient.
    std::vector<Tensor> input_grads = any_grad ? node->apply(grads) : std::vector<Tensor>{};

    for (size_t i = 0; i < node->next_edges.size(); ++i) {
      const Edge& e = node->next_edges[i];
      if (!e.node) continue;
      Node* next = e.node.get();
      if (i < input_grads.size() && input_grads[i].defined()) {
        auto& slots = pending[next];
        slots.resize(static_cast<size_t>(next->num_outputs));
        accumulate_into(slots[static_cast<size_t>(e.input_nr)], input_grads[i]);
      }
      keep_alive.try_emplace(next, e.node);
      if (--dependencies[next] == 0) ready.push(next);
    }
    if (!retain_graph) {
      node->release_saved();
      node->next_edges.clear();
    }
    keep_alive.erase(node);
  }
}

}  // namespace gtpo
