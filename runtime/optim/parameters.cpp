#include "runtime/optim/parameters.h"

#include <sstream>

#include "runtime/error.h"

namespace gtpo::optim {

namespace {
// "a, b, c, ... (N in all)": enough to spot a typo without flooding the message for a large model.
std::string some_names(const std::vector<Parameter>& params) {
  if (params.empty()) return "(the store is empty)";
  constexpr size_t kShown = 5;
  std::ostringstream os;
  for (size_t i = 0; i < params.size() && i < kShown; ++i) os << (i ? ", " : "") << params[i].name;
  if (params.size() > kShown) os << ", ... (" << params.size() << " in all)";
  return os.str();
}

// Views of one flat buffer may be separate parameters; only overlapping element ranges are an error
// (the optimiser would update that memory twice per step).
bool overlaps(const Tensor& a, const Tensor& b) {
  if (!a.same_storage(b) || a.numel() == 0 || b.numel() == 0) return false;
  const int64_t a0 = a.impl()->offset, b0 = b.impl()->offset;
  return a0 < b0 + b.numel() && b0 < a0 + a.numel();
}
}  // namespace

Tensor ParameterStore::add(const std::string& name, const Tensor& tensor) {
  GTPO_CHECK(tensor.defined(), "ParameterStore: parameter '", name, "' is an undefined tensor");
  return add(name, tensor, tensor.rank() >= 2);
}

Tensor ParameterStore::add(const std::string& name, const Tensor& tensor, bool weight_decay) {
  GTPO_CHECK(!name.empty(), "ParameterStore: a parameter needs a non-empty name");
  GTPO_CHECK(!contains(name), "ParameterStore: duplicate parameter name '", name, "'");
  GTPO_CHECK(tensor.defined(), "ParameterStore: parameter '", name, "' is an undefined tensor");
  GTPO_CHECK(tensor.dtype() == DType::f32, "ParameterStore: parameter '", name, "' must be f32, got ",
             tensor.describe());
  GTPO_CHECK(tensor.is_leaf(), "ParameterStore: parameter '", name,
             "' was computed by an op; register a leaf (detach() it first)");
  for (const Parameter& p : params_)
    GTPO_CHECK(!overlaps(p.tensor, tensor), "ParameterStore: parameter '", name, "' overlaps the memory of '",
               p.name, "'; register a tied weight once, under one name");
  tensor.set_requires_grad(true);
  index_.emplace(name, params_.size());
  params_.push_back(Parameter{name, tensor, weight_decay});
  return tensor;
}

size_t ParameterStore::index_of(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("ParameterStore: unknown parameter '", name, "'; known: ", some_names(params_));
  return it->second;
}

const Parameter& ParameterStore::entry(const std::string& name) const { return params_[index_of(name)]; }

std::vector<std::string> ParameterStore::names() const {
  std::vector<std::string> out;
  out.reserve(params_.size());
  for (const Parameter& p : params_) out.push_back(p.name);
  return out;
}

int64_t ParameterStore::numel() const {
  int64_t n = 0;
  for (const Parameter& p : params_) n += p.tensor.numel();
  return n;
}

void ParameterStore::zero_grad() const {
  for (const Parameter& p : params_) p.tensor.zero_grad();
}

}  // namespace gtpo::optim
