#include "runtime/dist/zero.h"

#include <algorithm>
#include <chrono>
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

// The exchanges' flat buffers live where the communicator reaches: the parameters' device (the host, or a
// GPU through NCCL), else the host (a GPU's gradients and weights are then staged through it).
Device buffer_device(const Communicator& comm, const optim::ParameterStore& params) {
  const Device d = params.parameters().front().tensor.device();
  return comm.reaches(d) ? d : Device::cpu;
}

// COUNT floats from element FIRST of T into BUF (on WHERE: T's device or the host), and back.
void to_buffer(const Tensor& t, int64_t first, int64_t count, float* buf, Device where) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  if (where == t.device())
    t.backend().copy(buf, t.data() + first, bytes);
  else
    t.backend().copy_to_host(buf, t.data() + first, bytes);
}
void from_buffer(const float* buf, Device where, const Tensor& t, int64_t first, int64_t count) {
  const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(float);
  if (where == t.device())
    t.backend().copy(t.mutable_data() + first, buf, bytes);
  else
    t.backend().copy_from_host(t.mutable_data() + first, buf, bytes);
}

// A flat buffer holding, rank after rank and parameter after parameter, the parts of nonzero SIZE(rank, i):
// where each lies (AT[r][i], -1 when absent) and each rank's range of the buffer.
struct Packing {
  std::vector<std::vector<int64_t>> at;
  Ranges ranges;
  int64_t total = 0;
};
template <class Size>
Packing pack(int ranks, std::size_t params, const Size& size) {
  Packing p;
  p.at.assign(static_cast<std::size_t>(ranks), std::vector<int64_t>(params, -1));
  for (int r = 0; r < ranks; ++r) {
    p.ranges.at.push_back(p.total);
    for (std::size_t i = 0; i < params; ++i) {
      const int64_t n = size(r, i);
      if (n <= 0) continue;
      p.at[static_cast<std::size_t>(r)][i] = p.total;
      p.total += n;
    }
    p.ranges.count.push_back(p.total - p.ranges.at.back());
  }
  return p;
}

// The exchanges run in rounds, so that their buffers stay small whatever the model: round J covers elements
// [J·S, (J+1)·S) of every rank's range (S = BUCKET / N), and SLICES[k] are rank k's owned slices cut to it.
std::vector<std::vector<OwnedSlice>> round_slices(const optim::ParameterStore& params, int ranks,
                                                  int64_t round, int64_t per_rank) {
  std::vector<std::vector<OwnedSlice>> out;
  for (int k = 0; k < ranks; ++k) {
    const Share range = share_of(params.numel(), k, ranks);
    const int64_t lo = range.first + round * per_rank, hi = std::min(range.last, lo + per_rank);
    std::vector<OwnedSlice> cut = optim::owned_slices(params, {k, ranks});
    for (OwnedSlice& s : cut) {
      const int64_t a = std::max(lo, s.flat_offset + s.first),
                    b = std::min(hi, s.flat_offset + s.first + s.count);
      s.first = b > a ? a - s.flat_offset : 0;
      s.count = b > a ? b - a : 0;
    }
    out.push_back(std::move(cut));
  }
  return out;
}

// 1. Every rank's gradient for rank k's range goes to rank k; this rank sums what it receives for its own
// range in rank order (the first contributor's values are taken as they are: no "0 +") into its range of
// each gradient (made where this rank had none but another rank had one).
void reduce_scatter(Communicator& comm, const optim::ParameterStore& params,
                    const std::vector<std::vector<uint8_t>>& has,
                    const std::vector<std::vector<OwnedSlice>>& slices) {
  const int N = comm.size(), me = comm.rank();
  const Device where = buffer_device(comm, params);
  const std::vector<OwnedSlice>& mine = slices[static_cast<std::size_t>(me)];
  const Packing out = pack(N, params.size(), [&](int k, std::size_t i) {
    return has[static_cast<std::size_t>(me)][i] ? slices[static_cast<std::size_t>(k)][i].count : 0;
  });
  const Packing in = pack(N, params.size(), [&](int k, std::size_t i) {
    return has[static_cast<std::size_t>(k)][i] ? mine[i].count : 0;
  });
  Tensor send = Tensor::empty(Shape{std::max<int64_t>(out.total, 1)}, where);
  Tensor recv = Tensor::empty(Shape{std::max<int64_t>(in.total, 1)}, where);
  for (int k = 0; k < N; ++k)
    for (std::size_t i = 0; i < params.size(); ++i)
      if (const int64_t at = out.at[static_cast<std::size_t>(k)][i]; at >= 0)
        to_buffer(params.parameters()[i].tensor.grad(), slices[static_cast<std::size_t>(k)][i].first,
                  slices[static_cast<std::size_t>(k)][i].count, send.mutable_data() + at, where);
  comm.exchange(send.data(), out.ranges, recv.mutable_data(), in.ranges, where, "gradients (reduce-scatter)");
  Backend& backend = recv.backend();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (mine[i].count == 0 || !any_of(has, i)) continue;
    float* sum = nullptr;
    for (int k = 0; k < N; ++k) {
      const int64_t at = in.at[static_cast<std::size_t>(k)][i];
      if (at < 0) continue;
      float* part = recv.mutable_data() + at;
      if (sum)
        backend.binary(BinaryOp::add, sum, part, sum, {1, mine[i].count});
      else
        sum = part;  // the first contributor: the sum is built in its place in the buffer
    }
    const Tensor& param = params.parameters()[i].tensor;
    if (!param.grad().defined()) param.set_grad(Tensor::zeros(param.shape(), param.device()));
    from_buffer(sum, where, param.grad(), mine[i].first, mine[i].count);
  }
}

// 2. The global norm from the ranges, in rank order, and the clip of this rank's range.
float clip_owned(Communicator& comm, const optim::ParameterStore& params, const std::vector<OwnedSlice>& mine,
                 float max_norm) {
  std::vector<const float*> ranges;  // this rank's part of every gradient, squared in one call
  std::vector<int64_t> sizes;
  Backend* backend = nullptr;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const Tensor grad = params.parameters()[i].tensor.grad();
    if (!grad.defined() || mine[i].count == 0) continue;
    backend = &grad.backend();
    ranges.push_back(grad.data() + mine[i].first);
    sizes.push_back(mine[i].count);
  }
  std::vector<double> each(ranges.size(), 0.0);
  if (backend) backend->sum_squares_each(ranges, sizes, each.data());
  double squares = 0.0;
  for (double s : each) squares += s;
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
                       const std::vector<std::vector<uint8_t>>& has,
                       const std::vector<std::vector<OwnedSlice>>& slices) {
  const int N = comm.size(), me = comm.rank();
  const Device where = buffer_device(comm, params);
  const Packing in = pack(N, params.size(), [&](int k, std::size_t i) {
    return any_of(has, i) && k != me ? slices[static_cast<std::size_t>(k)][i].count : 0;
  });
  const Packing mine = pack(1, params.size(), [&](int, std::size_t i) {
    return any_of(has, i) ? slices[static_cast<std::size_t>(me)][i].count : 0;
  });
  Ranges out;  // this rank's range to every other rank
  for (int k = 0; k < N; ++k) {
    out.at.push_back(0);
    out.count.push_back(k == me ? 0 : mine.total);
  }
  Tensor send = Tensor::empty(Shape{std::max<int64_t>(mine.total, 1)}, where);
  Tensor recv = Tensor::empty(Shape{std::max<int64_t>(in.total, 1)}, where);
  for (std::size_t i = 0; i < params.size(); ++i)
    if (const int64_t at = mine.at[0][i]; at >= 0)
      to_buffer(params.parameters()[i].tensor, slices[static_cast<std::size_t>(me)][i].first,
                slices[static_cast<std::size_t>(me)][i].count, send.mutable_data() + at, where);
  comm.exchange(send.data(), out, recv.mutable_data(), in.ranges, where, "weights (all-gather)");
  for (int k = 0; k < N; ++k)
    for (std::size_t i = 0; i < params.size(); ++i)
      if (const int64_t at = in.at[static_cast<std::size_t>(k)][i]; at >= 0)
        from_buffer(recv.data() + at, where, params.parameters()[i].tensor,
                    slices[static_cast<std::size_t>(k)][i].first,
                    slices[static_cast<std::size_t>(k)][i].count);
}

}  // namespace

optim::AdamWShard optimizer_shard(const Communicator& comm) { return {comm.rank(), comm.size()}; }

OptimizerStepResult optimizer_step(Communicator& comm, optim::AdamW& optimizer, float grad_clip, float lr,
                                   int64_t bucket) {
  OptimizerStepResult r;
  const optim::ParameterStore& params = optimizer.parameters();
  if (comm.size() == 1) {
    r.grad_norm = optim::clip_grad_norm(params, grad_clip);
    if (std::isfinite(r.grad_norm)) optimizer.step(lr);
    return r;
  }
  GTPO_CHECK(optimizer.shard().rank == comm.rank() && optimizer.shard().ranks == comm.size(),
             "distributed: the optimiser's shard is not this rank's");
  using Clock = std::chrono::steady_clock;
  const Traffic before = comm.traffic();
  const auto t0 = Clock::now();
  const std::vector<std::vector<uint8_t>> has = gradient_presence(comm, params);
  const int64_t per_rank = std::max<int64_t>(1, bucket / comm.size());
  const int64_t longest = (params.numel() + comm.size() - 1) / comm.size();  // no rank's range is longer
  const int64_t rounds = (longest + per_rank - 1) / per_rank;                // the same on every rank
  for (int64_t j = 0; j < rounds; ++j)
    reduce_scatter(comm, params, has, round_slices(params, comm.size(), j, per_rank));
  r.grad_norm = clip_owned(comm, params, optimizer.owned_slices(), grad_clip);
  if (!std::isfinite(r.grad_norm)) return r;  // every rank sees it; the caller stops
  const auto t1 = Clock::now();
  optimizer.step(lr);
  const auto t2 = Clock::now();
  for (int64_t j = 0; j < rounds; ++j)
    allgather_weights(comm, params, has, round_slices(params, comm.size(), j, per_rank));
  r.traffic = {comm.traffic().sent - before.sent, comm.traffic().received - before.received};
  r.seconds_exchange = std::chrono::duration<double>(t1 - t0 + (Clock::now() - t2)).count();
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
