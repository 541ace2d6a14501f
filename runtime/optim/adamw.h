// AdamW (decoupled weight decay, Loshchilov & Hutter) over a ParameterStore, with PyTorch's semantics.
//
// State is per parameter, keyed by the parameter's name: a step count and the first and second moment
// estimates (exp_avg, exp_avg_sq, PyTorch's names), created as zeros the first time the parameter has a
// gradient. A parameter without a gradient at a step is skipped entirely: its state and step count do not
// move, as in torch.optim.AdamW. The state can be read and restored by name, bit-exactly, for
// checkpoints.
//
// Sharded (ZeRO-1, docs/distributed.md): with AdamWShard{rank, ranks} the optimiser owns the contiguous
// range [P·rank/ranks, P·(rank+1)/ranks) of the flat parameter vector (every parameter's elements, in
// registration order; P = the store's numel) and keeps moments for those elements only; step() updates
// only them. The data-parallel step (runtime/dist/zero.h) reduces each rank's range of the gradient into
// it and all-gathers the updated weights. One rank of one ({0, 1}, the default) owns everything.
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

struct AdamWShard {
  int rank = 0, ranks = 1;
};

struct AdamWParamState {
  int64_t step = 0;    // updates applied to this parameter so far (drives bias correction)
  int64_t offset = 0;  // the first element of the parameter the moments cover (0 unless sharded)
  Tensor exp_avg;      // m: the parameter's shape, or 1-D over the owned elements when only some are owned
  Tensor exp_avg_sq;   // v
};

// One parameter's whole state on the host: what a checkpoint holds, whatever the shard.
struct AdamWFullState {
  std::string name;
  int64_t step = 0;
  Shape shape;
  std::vector<float> exp_avg, exp_avg_sq;
};

// Where a parameter's elements lie in the flat parameter vector, and which of them a shard owns.
struct OwnedSlice {
  int64_t flat_offset = 0;       // the parameter's first element in the flat vector
  int64_t first = 0, count = 0;  // the owned elements, relative to the parameter (count 0: none)
};
// Every parameter's slice owned by SHARD, in registration order (the whole of each for {0, 1}).
std::vector<OwnedSlice> owned_slices(const ParameterStore& params, AdamWShard shard);

class AdamW {
 public:
  // The store is referenced, not copied: it must outlive the optimiser. Parameters added to the store
  // later are picked up by the next step.
  explicit AdamW(ParameterStore& params, AdamWOptions options = {}, AdamWShard shard = {});

  void step() { step(options_.lr); }
  // One update of every parameter that has a gradient, in registration order.
  void step(float lr);

  const AdamWOptions& options() const { return options_; }
  ParameterStore& parameters() const { return params_; }
  const AdamWShard& shard() const { return shard_; }
  std::vector<OwnedSlice> owned_slices() const { return optim::owned_slices(params_, shard_); }

  // ---- state, for checkpoints ----------------------------------------------------------------
  bool has_state(const std::string& name) const { return state_.count(name) != 0; }
  // The live state of a parameter (its tensors are the ones updated in place); throws when the name is
  // unknown to the store or the parameter has not been stepped yet.
  const AdamWParamState& state(const std::string& name) const;
  // Names of parameters that have state, in registration order.
  std::vector<std::string> state_names() const;
  // Replaces a parameter's state with copies of the owned part of exp_avg/exp_avg_sq, which are whole
  // (checked against the parameter's shape; they may come from another device). step must be >= 1: state
  // only exists after a step. A shard that owns none of the parameter keeps nothing.
  void set_state(const std::string& name, int64_t step, const Tensor& exp_avg, const Tensor& exp_avg_sq);
  void clear_state() { state_.clear(); }
  // The whole state of every parameter that has one; an error when sharded (dist::gather_optimizer_state
  // assembles it from the ranks).
  std::vector<AdamWFullState> full_state() const;
  // Bytes the moments take on this rank.
  int64_t state_bytes() const;

 private:
  ParameterStore& params_;
  AdamWOptions options_;
  AdamWShard shard_;
  std::unordered_map<std::string, AdamWParamState> state_;
};

}  // namespace gtpo::optim
