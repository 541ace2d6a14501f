#include "runtime/dist/gradients.h"

#include "runtime/error.h"

namespace gtpo::dist {

void allreduce_gradients(Communicator& comm, const optim::ParameterStore& params) {
  if (comm.size() == 1) return;
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
