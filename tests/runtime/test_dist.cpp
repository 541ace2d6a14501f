// The communicator's host-side pieces (shares of work, the single-process collectives, the message codec)
// and the ZeRO-1 optimiser step on 1-4 ranks run as threads (tests/support/thread_ranks.h), against one
// process that sums the same gradients.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <optional>

#include "runtime/dist/communicator.h"
#include "runtime/dist/zero.h"
#include "runtime/error.h"
#include "runtime/optim/grad_clip.h"
#include "tests/support/random.h"
#include "tests/support/thread_ranks.h"

using namespace gtpo;

TEST_CASE("dist: shares cover the work contiguously and differ by at most one", "[runtime][dist]") {
  for (int64_t count : {0, 1, 2, 3, 7, 64}) {
    for (int size : {1, 2, 3, 8}) {
      int64_t next = 0, smallest = count, largest = 0;
      for (int rank = 0; rank < size; ++rank) {
        const dist::Share s = dist::share_of(count, rank, size);
        CHECK(s.first == next);
        next = s.last;
        smallest = std::min(smallest, s.last - s.first);
        largest = std::max(largest, s.last - s.first);
      }
      CHECK(next == count);
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("dist: the single process is rank 0 of 1 and its collectives are the identity", "[runtime][dist]") {
  dist::Communicator& c = dist::single_process();
  CHECK(c.rank() == 0);
  CHECK(c.size() == 1);
  CHECK(c.writer());
  CHECK(c.allgather({1, 2, 3}, "test") == std::vector<std::vector<uint8_t>>{{1, 2, 3}});
  CHECK(dist::any_rank(c, true, "test"));
  CHECK_FALSE(dist::any_rank(c, false, "test"));
  // Outside a launcher (no OMPI_COMM_WORLD_SIZE and the like) the process runs alone, as before.
  if (!std::getenv("OMPI_COMM_WORLD_SIZE") && !std::getenv("PMI_SIZE") && !std::getenv("PMIX_SIZE") &&
      !std::getenv("SLURM_NTASKS"))
    CHECK(dist::make_communicator(10)->size() == 1);
}

TEST_CASE("dist: messages round-trip and a short one is an error", "[runtime][dist]") {
  dist::ByteWriter w;
  w.put<int64_t>(-7);
  w.put_vector(std::vector<float>{1.5f, -0.25f});
  w.put_vector(std::vector<int32_t>{});
  w.put_string("héllo");
  dist::ByteReader r(w.bytes());
  CHECK(r.get<int64_t>() == -7);
  CHECK(r.get_vector<float>() == std::vector<float>{1.5f, -0.25f});
  CHECK(r.get_vector<int32_t>().empty());
  CHECK(r.get_string() == "héllo");
  CHECK(r.done());
  CHECK_THROWS_AS(r.get<uint8_t>(), Error);
}

namespace {

// Parameters of awkward sizes, so that the ranks' ranges cut through them.
const std::vector<std::pair<std::string, Shape>> kShapes = {{"embed", Shape{13, 7}},
                                                            {"norm", Shape{7}},
                                                            {"proj", Shape{7, 11}},
                                                            {"bias", Shape{11}},
                                                            {"head", Shape{5, 3}}};

optim::ParameterStore make_params() {
  optim::ParameterStore params;
  uint64_t seed = 1;
  for (const auto& [name, shape] : kShapes) params.add(name, testing::random_tensor(shape, seed++));
  return params;
}

// Rank R's gradient of parameter I at step S, or none: unless DENSE, "head" never has one and "bias" only
// on odd ranks.
std::optional<Tensor> rank_gradient(std::size_t i, const Shape& shape, int r, int s, bool dense = false) {
  if (!dense && (kShapes[i].first == "head" || (kShapes[i].first == "bias" && r % 2 == 0)))
    return std::nullopt;
  return testing::random_tensor(shape,
                                1000 + 100 * static_cast<uint64_t>(s) + 10 * i + static_cast<uint64_t>(r));
}

// What one process does with the same gradients: their sum in rank order (the first one as it is), then
// clip_grad_norm and one AdamW step.
float reference_step(optim::ParameterStore& params, optim::AdamW& adam, int ranks, int s, float clip) {
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::vector<float> sum;
    for (int r = 0; r < ranks; ++r) {
      const std::optional<Tensor> g = rank_gradient(i, kShapes[i].second, r, s);
      if (!g) continue;
      const std::vector<float> v = g->to_vector();
      if (sum.empty())
        sum = v;
      else
        for (std::size_t e = 0; e < sum.size(); ++e) sum[e] += v[e];
    }
    if (!sum.empty()) params.parameters()[i].tensor.set_grad(Tensor::from_vector(sum, kShapes[i].second));
  }
  const float norm = optim::clip_grad_norm(params, clip);
  adam.step(1e-2f);
  params.zero_grad();
  return norm;
}

struct RankResult {
  std::map<std::string, std::vector<float>> weights;
  std::vector<optim::AdamWFullState> state;  // rank 0's gathered state
  std::vector<float> norms;
  dist::Traffic traffic;  // of the last step
  int64_t state_bytes = 0;
};

// STEPS ZeRO-1 steps on every rank, starting from STATE (a checkpoint's whole state) when given.
std::vector<RankResult> sharded_steps(int ranks, int first_step, int steps, float clip,
                                      const std::vector<optim::AdamWFullState>* state = nullptr,
                                      const std::map<std::string, std::vector<float>>* weights = nullptr,
                                      bool dense = false, int64_t bucket = dist::kExchangeBucket) {
  std::vector<RankResult> results(static_cast<std::size_t>(ranks));
  test::ThreadRanks(ranks).run([&](dist::Communicator& comm) {
    optim::ParameterStore params = make_params();
    optim::AdamW adam(params, {}, dist::optimizer_shard(comm));
    if (weights)
      for (const optim::Parameter& p : params)
        p.tensor.copy_(Tensor::from_vector(weights->at(p.name), p.tensor.shape()));
    if (state)
      for (const optim::AdamWFullState& s : *state)
        adam.set_state(s.name, s.step, Tensor::from_vector(s.exp_avg, s.shape),
                       Tensor::from_vector(s.exp_avg_sq, s.shape));
    RankResult& out = results[static_cast<std::size_t>(comm.rank())];
    for (int s = first_step; s < first_step + steps; ++s) {
      for (std::size_t i = 0; i < params.size(); ++i)
        if (std::optional<Tensor> g = rank_gradient(i, kShapes[i].second, comm.rank(), s, dense))
          params.parameters()[i].tensor.set_grad(*g);
      const dist::OptimizerStepResult step = dist::optimizer_step(comm, adam, clip, 1e-2f, bucket);
      params.zero_grad();
      out.norms.push_back(step.grad_norm);
      out.traffic = step.traffic;
    }
    for (const optim::Parameter& p : params) out.weights[p.name] = p.tensor.to_vector();
    out.state = dist::gather_optimizer_state(comm, adam);
    out.state_bytes = adam.state_bytes();
  });
  return results;
}

std::map<std::string, std::vector<float>> weights_of(const optim::ParameterStore& params) {
  std::map<std::string, std::vector<float>> w;
  for (const optim::Parameter& p : params) w[p.name] = p.tensor.to_vector();
  return w;
}

void check_same_state(const std::vector<optim::AdamWFullState>& a,
                      const std::vector<optim::AdamWFullState>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].step == b[i].step);
    CHECK(a[i].exp_avg == b[i].exp_avg);
    CHECK(a[i].exp_avg_sq == b[i].exp_avg_sq);
  }
}

}  // namespace

TEST_CASE("dist: ZeRO-1 on 2-4 ranks takes the steps of one process summing the same gradients",
          "[runtime][dist][zero]") {
  for (int ranks : {1, 2, 3, 4}) {
    CAPTURE(ranks);
    // Clipping off: the norm does not enter the update, so the weights and moments are bitwise one process's
    // (each element is summed in rank order on both sides).
    optim::ParameterStore params = make_params();
    optim::AdamW adam(params);
    std::vector<float> norms;
    for (int s = 0; s < 3; ++s) norms.push_back(reference_step(params, adam, ranks, s, 0.0f));
    // One round of exchanges, and rounds of 7 elements that cut through every parameter.
    const std::vector<RankResult> got = sharded_steps(ranks, 0, 3, 0.0f);
    const std::vector<RankResult> in_rounds = sharded_steps(ranks, 0, 3, 0.0f, nullptr, nullptr, false, 7);
    for (std::size_t r = 0; r < got.size(); ++r) CHECK(in_rounds[r].weights == got[r].weights);
    check_same_state(in_rounds[0].state, got[0].state);
    for (const RankResult& r : got) {
      CHECK(r.weights == weights_of(params));  // every rank holds the same, whole weights
      for (std::size_t s = 0; s < norms.size(); ++s) CHECK(r.norms[s] == Approx(norms[s]).epsilon(1e-6));
    }
    check_same_state(got[0].state,
                     adam.full_state());  // "head" never had a gradient: no state, as one process
    CHECK(std::none_of(got[0].state.begin(), got[0].state.end(),
                       [](const auto& s) { return s.name == "head"; }));
  }
}

TEST_CASE("dist: ZeRO-1 with clipping agrees with one process to rounding and repeats bit for bit",
          "[runtime][dist][zero]") {
  optim::ParameterStore params = make_params();
  optim::AdamW adam(params);
  for (int s = 0; s < 3; ++s) reference_step(params, adam, 3, s, 0.5f);
  const std::vector<RankResult> a = sharded_steps(3, 0, 3, 0.5f), b = sharded_steps(3, 0, 3, 0.5f);
  for (std::size_t r = 0; r < a.size(); ++r) {
    CHECK(a[r].weights == b[r].weights);
    CHECK(a[r].weights == a[0].weights);
    CHECK(a[r].norms == b[r].norms);
  }
  check_same_state(a[0].state, b[0].state);
  for (const auto& [name, w] : weights_of(params))
    for (std::size_t e = 0; e < w.size(); ++e) CHECK(a[0].weights.at(name)[e] == Approx(w[e]).margin(1e-5));
}

TEST_CASE("dist: a sharded optimiser state saved by 4 ranks continues on 2 ranks and on one process",
          "[runtime][dist][zero]") {
  const std::vector<RankResult> first = sharded_steps(4, 0, 2, 0.0f);  // steps 0-1 on 4 ranks, then saved
  // Steps 2-3 on 2 ranks and on 1 from the gathered state, against one process loading the same state and
  // summing the same ranks' gradients.
  for (int ranks : {2, 1}) {
    CAPTURE(ranks);
    optim::ParameterStore ref_params = make_params();
    for (const optim::Parameter& p : ref_params)
      p.tensor.copy_(Tensor::from_vector(first[0].weights.at(p.name), p.tensor.shape()));
    optim::AdamW ref_adam(ref_params);
    for (const optim::AdamWFullState& s : first[0].state)
      ref_adam.set_state(s.name, s.step, Tensor::from_vector(s.exp_avg, s.shape),
                         Tensor::from_vector(s.exp_avg_sq, s.shape));
    for (int s = 2; s < 4; ++s) reference_step(ref_params, ref_adam, ranks, s, 0.0f);
    const std::vector<RankResult> rest = sharded_steps(ranks, 2, 2, 0.0f, &first[0].state, &first[0].weights);
    for (const RankResult& r : rest) CHECK(r.weights == weights_of(ref_params));
    check_same_state(rest[0].state, ref_adam.full_state());
  }
}

TEST_CASE("dist: ZeRO-1 moves 2(N-1)/N times the gradient's bytes per rank and keeps 1/N of the moments",
          "[runtime][dist][zero]") {
  for (int ranks : {2, 3, 4}) {
    CAPTURE(ranks);
    const std::vector<RankResult> got = sharded_steps(ranks, 0, 1, 1.0f, nullptr, nullptr, true, 7);
    double P = 0;
    for (const auto& [name, shape] : kShapes) P += static_cast<double>(shape.numel());
    const double ring = 2.0 * (ranks - 1) / ranks * 4.0 * P;
    for (const RankResult& r : got) {
      // The rest is the per-parameter presence flags and the norm's 8 bytes (P is only 280 here).
      CHECK(static_cast<double>(r.traffic.sent) / ring == Approx(1.0).margin(0.1));
      CHECK(static_cast<double>(r.traffic.received) / ring == Approx(1.0).margin(0.1));
      CHECK(static_cast<double>(r.state_bytes) * ranks / (8.0 * P) == Approx(1.0).margin(0.02));
    }
  }
}
