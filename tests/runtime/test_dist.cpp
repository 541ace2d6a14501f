// The communicator's host-side pieces: shares of work, the single-process collectives, the message codec
// and the gradient reduction's single-process identity.
#include <catch2/catch.hpp>

#include "runtime/dist/communicator.h"
#include "runtime/dist/gradients.h"
#include "runtime/error.h"

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

TEST_CASE("dist: one process keeps its gradients as they are", "[runtime][dist]") {
  optim::ParameterStore params;
  Tensor w = params.add("w", Tensor::from_vector({1, 2, 3}, {3}));
  params.add("b", Tensor::from_vector({0}, {1}));  // no gradient: stays without one
  w.set_grad(Tensor::from_vector({0.5f, -1, 2}, {3}));
  dist::allreduce_gradients(dist::single_process(), params);
  CHECK(w.grad().to_vector() == std::vector<float>{0.5f, -1, 2});
  CHECK_FALSE(params.get("b").grad().defined());
}
