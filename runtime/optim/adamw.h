// AdamW (decoupled weight decay, Loshchilov & Hutter) over a ParameterStore, with PyTorch's semantics.
//
// State is per parameter, keyed by the parameter's name: a step count and the first and second moment
// estimates (exp_avg, exp_avg_sq, PyTorch's names), created as zeros the first time the parameter has a
// gradient. A parameter without a gradient at a step is skipped entirely: its state and step count do not
// move, as in torch.optim.AdamW. The state can be read and restored by name, bit-exactly, for
// checkpoints.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/optim/parameters.h"

namespace gtpo::optim {

struct AdamWOptions {
  float lr = 1e-3f;  // used by step(); step(lr) overrides it (an LR schedule drives it per step)
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;  // applied only to parameters whose store flag is on
};

struct AdamWParamState {
  int64_t step = 0;  // updates applied to this parameter so far (drives bias correction)
  Tensor exp_avg;     // m, shape and device of the parameter
  Tensor exp_avg_sq;  // v
};

class AdamW {
 public:
  // The store is referenced, not copied: it must outlive the optimiser. Parameters added to the store
  // later are picked up by the next step.
  explicit AdamW(ParameterStore& params, AdamWOptions options = {});

  void step() { step(options_.lr); }
  // One update of every parameter that has a gradient, in registration order.
  void step(float lr);

  const AdamWOptions& options() const { return options_; }
  ParameterStore& parameters() const { return params_; }

  // ---- state, for checkpoints ----------------------------------------------------------------
  bool has_state(const std::string& name) const { return state_.count(name) != 0; }
  // The live state of a parameter (its tensors are the ones updated in place); throws when the name is
  // unknown to the store or the parameter has not been stepped yet.
  const AdamWParamState& state(const std::string& name) const;
  // Names of parameters that have state, in registration order.
  std::vector<std::string> state_names() const;
  // Replaces a parameter's state with copies of exp_avg/exp_avg_sq (checked against the parameter's
  // shape; they may come from another device). step must be >= 1: state only exists after a step.
  void set_state(const std::string& name, int64_t step, const Tensor& exp_avg, const Tensor& exp_avg_sq);
  void clear_state() { state_.clear(); }

 private:
  ParameterStore& params_;
  AdamWOptions options_;
  std::unordered_map<std::string, AdamWParamState> state_;
};

}  // namespace gtpo::optim
