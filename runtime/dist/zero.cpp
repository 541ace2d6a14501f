#include "runtime/dist/zero.h"

#include <cmath>

#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/optim/grad_clip.h"

namespace gtpo::dist {

using optim::OwnedSlice;

namespace {

// has[k][i]: rank k holds a gradient for parameter i.
std::vector<std::vector<uint8_t>> gradient_presence(Communicator& comm, const optim::ParameterStore& params) {
  std::vector<uint8_t> mine;
  for (const optim::Parameter& p : params) mine.push_back(p.tensor.grad().defined() ? 1 : 0);
  std::vector<std::vector<uint8_t>> has = comm.allgather(mine, "gradient presence");
  for (const std::vector<uint8_t>& h : has)
    GTPO_CHECK(h.size() == params.size(), "distributed: ranks disagree on the number of parameters");
  return has;
}

bool any_of(const std::vector<std::vector<uint8_t>>& has, std::size_t i) {
  for (const std::vector<uint8_t>& h : has)
    if (h[i]) return true;
  return false;
}

// Appends elements [first, first + count) of T (any device) to OUT.
void append_slice(std::vector<uint8_t>& out, const Tensor& t, int64_t first, int64_t count) {
  const std::size_t at = out.size(), bytes = static_cast<std::size_t>(count) * sizeof(float);
  out.resize(at + bytes);
  if (bytes) t.backend().copy_to_host(out.data() + at, t.data() + first, bytes);
}

// 1. Every rank's gradient for rank k's range goes to rank k; this rank sums what it receives for its own
// range in rank order (the first contributor's values are taken as they are: no "0 +") and writes the
// sum into its range of each gradient (made where this rank had none but another rank had one).
void reduce_scatter(Communicator& comm, const optim::ParameterStore& params,
                    const std::vector<std::vector<uint8_t>>& has) {
  const int N = comm.size(), me = comm.rank();
  std::vector<std::vector<uint8_t>> to_each(static_cast<std::size_t>(N));
  for (int k = 0; k < N; ++k) {
    const std::vector<OwnedSlice> theirs = optim::owned_slices(params, {k, N});
    for (std::size_t i = 0; i < params.size(); ++i)
      if (has[static_cast<std::size_t>(me)][i] && theirs[i].count > 0)
        append_slice(to_each[static_cast<std::size_t>(k)], params.parameters()[i].tensor.grad(),
                     theirs[i].first, theirs[i].count);
  }
  const std::vector<std::vector<uint8_t>> got = comm.alltoall(to_each, "gradients (reduce-scatter)");
  std::vector<std::size_t> read(got.size(), 0);
  const std::vector<OwnedSlice> mine = optim::owned_slices(params, {me, N});
  std::vector<float> sum;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const OwnedSlice& o = mine[i];
    if (o.count == 0 || !any_of(has, i)) continue;
    sum.assign(static_cast<std::size_t>(o.count), 0.0f);
    bool first = true;
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (!has[k][i]) continue;
      const std::size_t bytes = sum.size() * sizeof(float);
      GTPO_CHECK(read[k] + bytes <= got[k].size(), "distributed: rank ", k, " sent a short gradient");
      const float* part = reinterpret_cast<const float*>(got[k].data() + read[k]);
      read[k] += bytes;
      for (std::size_t e = 0; e < sum.size(); ++e) sum[e] = first ? part[e] : sum[e] + part[e];
      first = false;
    }
    const Tensor& param = params.parameters()[i].tensor;
    if (!param.grad().defined()) param.set_grad(Tensor::zeros(param.shape(), param.device()));
    param.backend().copy_from_host(param.grad().mutable_data() + o.first, sum.data(),
                                   sum.size() * sizeof(float));
  }
}

// 2. The global norm from the ranges, in rank order, and the clip of this rank's range.
float clip_owned(Communicator& comm, const optim::ParameterStore& params, const std::vector<OwnedSlice>& mine,
                 float max_norm) {
  double squares = 0.0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor grad = params.parameters()[i].tensor.grad();
    if (grad.defined() && mine[i].count > 0)
      squares += grad.backend().sum_squares(grad.data() + mine[i].first, mine[i].count);
  }
  ByteWriter w;
  w.put(squares);
  double total = 0.0;
  for (const std::vector<uint8_t>& part : comm.allgather(w.bytes(), "gradient norm"))
    total += ByteReader(part).get<double>();
  const double norm = std::sqrt(total);
  const float coef = optim::clip_coefficient(norm, max_norm);
  for (std::size_t i = 0; coef != 1.0f && i < params.size(); ++i) {
    const Tensor grad = params.parameters()[i].tensor.grad();
    if (!grad.defined() || mine[i].count == 0) continue;
    float* g = grad.mutable_data() + mine[i].first;
    grad.backend().unary(UnaryOp::scale, g, g, mine[i].count, coef);
  }
  return static_cast<float>(norm);
}

// 4. Every rank's updated range of every parameter some rank had a gradient for, written into the others.
void allgather_weights(Communicator& comm, const optim::ParameterStore& params,
                       const std::vector<std::vector<uint8_t>>& has) {
  const int N = comm.size(), me = comm.rank();
  std::vector<uint8_t> mine_bytes;
  const std::vector<OwnedSlice> mine = optim::owned_slices(params, {me, N});
  for (std::size_t i = 0; i < params.size(); ++i)
    if (any_of(has, i) && mine[i].count > 0)
      append_slice(mine_bytes, params.parameters()[i].tensor, mine[i].first, mine[i].count);
  const std::vector<std::vector<uint8_t>> got = comm.allgather(mine_bytes, "weights (all-gather)");
  for (int k = 0; k < N; ++k) {
    if (k == me) continue;
    const std::vector<OwnedSlice> theirs = optim::owned_slices(params, {k, N});
    std::size_t read = 0;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!any_of(has, i) || theirs[i].count == 0) continue;
      const std::size_t bytes = static_cast<std::size_t>(theirs[i].count) * sizeof(float);
      GTPO_CHECK(read + bytes <= got[static_cast<std::size_t>(k)].size(), "distributed: rank ", k,
                 " sent short weights");
      const Tensor& param = params.parameters()[i].tensor;
      param.backend().copy_from_host(param.mutable_data() + theirs[i].first,
                                     got[static_cast<std::size_t>(k)].data() + read, bytes);
      read += bytes;
    }
  }
}

}  // namespace

optim::AdamWShard optimizer_shard(const Communicator& comm) { return {comm.rank(), comm.size()}; }

OptimizerStepResult optimizer_step(Communicator& comm, optim::AdamW& optimizer, float grad_clip, float lr) {
  OptimizerStepResult r;
  const optim::ParameterStore& params = optimizer.parameters();
  if (comm.size() == 1) {
    r.grad_norm = optim::clip_grad_norm(params, grad_clip);
    if (std::isfinite(r.grad_norm)) optimizer.step(lr);
    return r;
  }
  GTPO_CHECK(optimizer.shard().rank == comm.rank() && optimizer.shard().ranks == comm.size(),
             "distributed: the optimiser's shard is not this rank's");
  const Traffic before = comm.traffic();
  const std::vector<std::vector<uint8_t>> has = gradient_presence(comm, params);
  reduce_scatter(comm, params, has);
  r.grad_norm = clip_owned(comm, params, optimizer.owned_slices(), grad_clip);
  if (!std::isfinite(r.grad_norm)) return r;  // every rank sees it; the caller stops
  optimizer.step(lr);
  allgather_weights(comm, params, has);
  r.traffic = {comm.traffic().sent - before.sent, comm.traffic().received - before.received};
  return r;
}

std::vector<optim::AdamWFullState> gather_optimizer_state(Communicator& comm, const optim::AdamW& optimizer) {
  if (comm.size() == 1) return optimizer.full_state();
  const optim::ParameterStore& params = optimizer.parameters();
  ByteWriter w;
  for (const std::string& name : optimizer.state_names()) {
    const optim::AdamWParamState& s = optimizer.state(name);
    w.put<uint64_t>(params.index_of(name));
    w.put<int64_t>(s.step);
    w.put<int64_t>(s.offset);
    w.put_vector(s.exp_avg.to_vector());
    w.put_vector(s.exp_avg_sq.to_vector());
  }
  const std::vector<std::vector<uint8_t>> parts = comm.gather_to_writer(w.bytes(), "optimiser state");
  std::vector<optim::AdamWFullState> whole(params.size());
  std::vector<int64_t> covered(params.size(), 0);
  for (const std::vector<uint8_t>& part : parts) {
    for (ByteReader r(part); !r.done();) {
      const uint64_t i = r.get<uint64_t>();
      GTPO_CHECK(i < params.size(), "distributed: optimiser state of an unknown parameter");
      const optim::Parameter& p = params.parameters()[i];
      const int64_t step = r.get<int64_t>(), offset = r.get<int64_t>();
      const std::vector<float> m = r.get_vector<float>(), v = r.get_vector<float>();
      optim::AdamWFullState& s = whole[i];
      if (covered[i] == 0)
        s = {p.name, step, p.tensor.shape(), std::vector<float>(p.tensor.numel()),
             std::vector<float>(p.tensor.numel())};
      GTPO_CHECK(s.step == step && m.size() == v.size() &&
                     offset + static_cast<int64_t>(m.size()) <= p.tensor.numel(),
                 "distributed: the ranks' optimiser states of '", p.name, "' disagree");
      std::copy(m.begin(), m.end(), s.exp_avg.begin() + offset);
      std::copy(v.begin(), v.end(), s.exp_avg_sq.begin() + offset);
      covered[i] += static_cast<int64_t>(m.size());
    }
  }
  std::vector<optim::AdamWFullState> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (covered[i] == 0) continue;
    GTPO_CHECK(covered[i] == params.parameters()[i].tensor.numel(),
               "distributed: the ranks' optimiser states of '", params.parameters()[i].name,
               "' do not cover it");
    out.push_back(std::move(whole[i]));
  }
  return out;
}

}  // namespace gtpo::dist
