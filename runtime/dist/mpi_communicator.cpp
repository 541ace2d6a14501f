// The MPI communicator (host buffers). Every collective is nonblocking and polled against a deadline
// (train.collective_timeout_s): a rank that died or hangs makes the others print which collective timed
// out and MPI_Abort the job, never wait forever. (A rank that dies is usually noticed sooner by mpirun
// itself, which then ends the job.)
#if defined(GTPO_WITH_MPI)
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/dist/communicator.h"
#include "runtime/error.h"

namespace gtpo::dist {

namespace {

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(double timeout_s) : timeout_s_(timeout_s) {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) MPI_Init(nullptr, nullptr);
    // Errors abort the job with MPI's own message rather than returning codes nobody could act on.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiCommunicator() override {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& bytes, const char* what) override {
    long long mine = static_cast<long long>(bytes.size());
    std::vector<long long> sizes(static_cast<std::size_t>(size_));
    MPI_Request req;
    MPI_Iallgather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD, &req);
    wait(req, what);
    std::vector<int> counts(sizes.size()), displs(sizes.size());
    long long total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      GTPO_CHECK(total + sizes[r] < (1LL << 31), "collective '", what, "': more than 2 GiB in one gather");
      counts[r] = static_cast<int>(sizes[r]);
      displs[r] = static_cast<int>(total);
      total += sizes[r];
    }
    std::vector<uint8_t> all(static_cast<std::size_t>(total));
    MPI_Iallgatherv(bytes.data(), static_cast<int>(mine), MPI_BYTE, all.data(), counts.data(), displs.data(),
                    MPI_BYTE, MPI_COMM_WORLD, &req);
    wait(req, what);
    std::vector<std::vector<uint8_t>> parts(sizes.size());
    for (std::size_t r = 0; r < sizes.size(); ++r)
      parts[r].assign(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
    return parts;
  }

  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "gtpo: rank %d of %d: %s\n", rank_, size_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; this only satisfies [[noreturn]]
  }

 private:
  // Polls REQ until it completes or the deadline passes; a short spin, then sleeps so that a waiting rank
  // leaves the cores to the ranks still computing.
  void wait(MPI_Request& req, const char* what) {
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(timeout_s_);
    for (int polls = 0;; ++polls) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (timeout_s_ > 0 && Clock::now() > deadline) {
        char msg[320];
        std::snprintf(msg, sizeof msg,
                      "collective '%s' did not complete within train.collective_timeout_s = %g s: another rank "
                      "died or hangs; aborting the job (the last checkpoint in train.out_dir stays loadable)",
                      what, timeout_s_);
        abort(msg);
      }
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(polls > 20000 ? 1000 : 50));
    }
  }

  double timeout_s_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s) {
  return std::make_unique<MpiCommunicator>(timeout_s);
}

}  // namespace gtpo::dist
#endif  // GTPO_WITH_MPI
