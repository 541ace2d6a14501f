// N data-parallel ranks as threads of one test process: each gets a dist::Communicator whose collectives
// go through a shared board, so the distributed code paths (reduce-scatter, all-gather, gathers to the
// writer) run here without mpirun. The traffic is counted as the MPI communicator counts it.
#pragma once
#include <algorithm>
#include <barrier>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "runtime/dist/communicator.h"
#include "runtime/error.h"

namespace gtpo::test {

class ThreadRanks {
 public:
  explicit ThreadRanks(int ranks)
      : ranks_(ranks),
        board_(static_cast<std::size_t>(ranks * ranks)),
        posts_(static_cast<std::size_t>(ranks)),
        sync_(ranks) {}

  // Runs BODY on every rank, one thread each; the first exception any rank threw is rethrown here.
  void run(const std::function<void(dist::Communicator&)>& body) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks_));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks_; ++r)
      threads.emplace_back([&, r] {
        Rank comm(*this, r);
        try {
          body(comm);
        } catch (...) {
          errors[static_cast<std::size_t>(r)] = std::current_exception();
        }
      });
    for (std::thread& t : threads) t.join();
    for (const std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }

 private:
  class Rank final : public dist::Communicator {
   public:
    Rank(ThreadRanks& all, int rank) : all_(all), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return all_.ranks_; }
    void exchange(const float* send, const dist::Ranges& to, float* recv, const dist::Ranges& from,
                  Device where, const char* what) override {
      GTPO_CHECK(where == Device::cpu, "collective '", what, "': host buffers only");
      all_.posts_[static_cast<std::size_t>(rank_)] = {send, &to};
      all_.sync_.arrive_and_wait();
      for (int k = 0; k < all_.ranks_; ++k) {
        const auto [peer_send, peer_to] = all_.posts_[static_cast<std::size_t>(k)];
        const std::size_t r = static_cast<std::size_t>(rank_), kk = static_cast<std::size_t>(k);
        GTPO_CHECK(peer_to->count[r] == from.count[kk], "collective '", what, "': rank ", k, " sends ",
                   peer_to->count[r], " floats, rank ", rank_, " expects ", from.count[kk]);
        std::copy_n(peer_send + peer_to->at[r], from.count[kk], recv + from.at[kk]);
        if (k != rank_) {
          traffic_.sent += static_cast<uint64_t>(to.count[kk]) * 4;
          traffic_.received += static_cast<uint64_t>(from.count[kk]) * 4;
        }
      }
      all_.sync_.arrive_and_wait();
    }
    // TO_EACH[r] goes to rank r; returns what every rank sent this one.
    std::vector<std::vector<uint8_t>> alltoall(const std::vector<std::vector<uint8_t>>& to_each,
                                               const char* what) {
      const int n = all_.ranks_;
      GTPO_CHECK(static_cast<int>(to_each.size()) == n, "collective '", what, "': wrong number of parts");
      for (int k = 0; k < n; ++k)
        all_.board_[static_cast<std::size_t>(rank_ * n + k)] = to_each[static_cast<std::size_t>(k)];
      all_.sync_.arrive_and_wait();
      std::vector<std::vector<uint8_t>> got;
      for (int k = 0; k < n; ++k) {
        got.push_back(all_.board_[static_cast<std::size_t>(k * n + rank_)]);
        if (k != rank_) {
          traffic_.sent += to_each[static_cast<std::size_t>(k)].size();
          traffic_.received += got.back().size();
        }
      }
      all_.sync_.arrive_and_wait();  // nobody writes the board again before everyone has read it
      return got;
    }
    std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& bytes,
                                                const char* what) override {
      return alltoall(std::vector<std::vector<uint8_t>>(static_cast<std::size_t>(all_.ranks_), bytes), what);
    }
    std::vector<std::vector<uint8_t>> gather_to_writer(const std::vector<uint8_t>& bytes,
                                                       const char* what) override {
      std::vector<std::vector<uint8_t>> to_each(static_cast<std::size_t>(all_.ranks_));
      to_each[0] = bytes;
      std::vector<std::vector<uint8_t>> got = alltoall(to_each, what);
      return rank_ == 0 ? got : std::vector<std::vector<uint8_t>>{};
    }
    [[noreturn]] void abort(const std::string& message) override { fail("rank ", rank_, ": ", message); }

   private:
    ThreadRanks& all_;
    int rank_;
  };

  int ranks_;
  std::vector<std::vector<uint8_t>> board_;  // board_[from * ranks + to]
  std::vector<std::pair<const float*, const dist::Ranges*>> posts_;  // each rank's send buffer and ranges
  std::barrier<> sync_;
};

}  // namespace gtpo::test
