// The optimiser step of data-parallel training, ZeRO-1 style (docs/distributed.md): after every rank has
// back-propagated its share of a mini-batch,
//   1. reduce-scatter: rank r receives every rank's gradient for its own range of the flat parameter vector
//      (the range its sharded AdamW owns, optim::AdamWShard{r, N}) and sums them in rank order 0, 1, ...;
//   2. the global gradient norm is the square root of the ranks' sums of squares over their ranges, added
//      in rank order; every rank clips its range with the same coefficient;
//   3. each rank's AdamW updates its range (it keeps the moments of that range only);
//   4. all-gather: every rank receives every other range's updated weights.
// Each rank sends and receives about 2(N-1)/N · 4P bytes per step (a ring all-reduce's figure), every rank
// ends with the same weights bit for bit, and a given N gives the same bits on every run. With one process
// it is exactly clip_grad_norm followed by AdamW::step.
#pragma once
#include <vector>

#include "runtime/dist/communicator.h"
#include "runtime/optim/adamw.h"

namespace gtpo::dist {

// This rank's shard, for the optimiser that optimizer_step drives.
optim::AdamWShard optimizer_shard(const Communicator& comm);

struct OptimizerStepResult {
  float grad_norm = 0.0f;  // of the summed gradient, before clipping (non-finite: the caller stops)
  Traffic traffic;         // what this rank sent and received for this step
  double seconds_exchange = 0.0;  // in the exchanges, waiting for slower ranks included
};

// One optimiser step on the gradients the ranks hold (a parameter without a gradient on a rank contributes
// nothing there; one without a gradient on every rank is left alone, as in one process). OPTIMIZER's shard
// must be optimizer_shard(COMM). A non-finite norm takes no step (the caller reports it and stops). Leaves
// the gradients partly reduced: zero them before the next backward. The exchanges go in rounds of at most
// BUCKET elements per rank and phase (their send and receive buffers: 2 · 4 · BUCKET bytes, whatever P).
inline constexpr int64_t kExchangeBucket = int64_t{4} << 20;  // 16 MB of fp32 each way
OptimizerStepResult optimizer_step(Communicator& comm, optim::AdamW& optimizer, float grad_clip, float lr,
                                   int64_t bucket = kExchangeBucket);

// Every parameter's whole optimiser state on the writer (rank 0), assembled from the ranks' shards for a
// checkpoint; an empty list on the other ranks. Collective.
std::vector<optim::AdamWFullState> gather_optimizer_state(Communicator& comm, const optim::AdamW& optimizer);

}  // namespace gtpo::dist
