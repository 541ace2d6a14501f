#include "runtime/dist/gradients.h"

#include "runtime/error.h"

namespace gtpo::dist {

namespace {
// Device gradients summed where they are (NCCL), when the communicator can: every rank must pass the same
// buffers, so a rank without a gradient a peer has contributes zeros (x + 0 = x exactly). False = host path.
bool device_sum(Communicator& comm, const optim::ParameterStore& params) {
  ByteWriter w;
  for (const optim::Parameter& p : params) w.put<uint8_t>(p.tensor.grad().defined() ? 1 : 0);
  std::vector<uint8_t> any(params.size(), 0);
  for (const std::vector<uint8_t>& part : comm.allgather(w.bytes(), "gradient presence"))
    for (std::size_t i = 0; i < any.size() && i < part.size(); ++i) any[i] |= part[i];
  std::size_t at = 0;
  for (const optim::Parameter& p : params) {
    if (any[at++] == 0) continue;
    Tensor g = p.tensor.grad();
    if (!g.defined()) {
      g = Tensor::zeros(p.tensor.shape(), p.tensor.device());
      p.tensor.set_grad(g);
    }
    if (!comm.allreduce_device_sum(static_cast<float*>(g.mutable_data()), static_cast<std::size_t>(g.numel()),
                                   "gradients"))
      return false;  // decided by the communicator's kind, so on the first parameter, identically on every rank
  }
  return true;
}
}  // namespace

void allreduce_gradients(Communicator& comm, const optim::ParameterStore& params) {
  if (comm.size() == 1) return;
  if (!params.empty() && params.parameters().front().tensor.device() != Device::cpu && device_sum(comm, params))
    return;
  ByteWriter w;
  for (const optim::Parameter& p : params) {
    const Tensor g = p.tensor.grad();
    w.put<uint8_t>(g.defined() ? 1 : 0);
    if (g.defined()) w.put_vector(g.to_vector());
  }
  const std::vector<std::vector<uint8_t>> parts = comm.allgather(w.bytes(), "gradients");
  std::vector<ByteReader> readers(parts.begin(), parts.end());
  for (const optim::Parameter& p : params) {
    std::vector<float> sum;
    bool any = false;
    for (ByteReader& r : readers) {
      if (!r.get<uint8_t>()) continue;
      std::vector<float> g = r.get_vector<float>();
      GTPO_CHECK(static_cast<int64_t>(g.size()) == p.tensor.numel(), "gradients of ", p.name,
                 ": ranks disagree on the size");
      if (!any) {
        sum = std::move(g);
        any = true;
      } else {
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += g[i];
      }
    }
    if (any) p.tensor.set_grad(Tensor::from_vector(sum, p.tensor.shape(), p.tensor.device()));
  }
}

}  // namespace gtpo::dist
