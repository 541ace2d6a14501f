// The gradient all-reduce of data-parallel training: after every rank has back-propagated its share of a
// mini-batch, each parameter's gradient becomes the sum over ranks, added in rank order (0, 1, ...) on
// every rank, so all ranks take the same optimiser step bit for bit.
#pragma once
#include "runtime/dist/communicator.h"
#include "runtime/optim/parameters.h"

namespace gtpo::dist {

// Replaces every parameter's gradient by its sum over ranks. A rank without a gradient for a parameter
// (it had no micro-batch) contributes nothing; a parameter no rank has a gradient for keeps none, as one
// process would. The sum starts from the first contributing rank's gradient (no "0 +"), so with one
// micro-batch per rank it is bitwise the sum one process accumulates over the same micro-batches.
// Host buffers go through the communicator's gather (MPI on the CPU; device tensors are staged through
// the host here; a CUDA build with NCCL reduces device buffers directly, see docs/distributed.md).
void allreduce_gradients(Communicator& comm, const optim::ParameterStore& params);

}  // namespace gtpo::dist
