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
    const std::vector<long long> sizes = exchange_sizes(std::vector<long long>(size_, size_of(bytes)), what);
    const Layout in = layout(sizes, what);
    std::vector<uint8_t> all(static_cast<std::size_t>(in.total));
    MPI_Request req;
    MPI_Iallgatherv(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, all.data(), in.counts.data(),
                    in.displs.data(), MPI_BYTE, MPI_COMM_WORLD, &req);
    wait(req, what);
    count(size_of(bytes) * (size_ - 1), in.total - size_of(bytes));
    return split(all, in);
  }

  void exchange(const float* send, const Ranges& to, float* recv, const Ranges& from, Device where,
                const char* what) override {
    GTPO_CHECK(where == Device::cpu, "collective '", what, "': MPI reaches host buffers only");
    const std::vector<int> sc = ints(to.count, what), sd = ints(to.at, what), rc = ints(from.count, what),
                           rd = ints(from.at, what);
    MPI_Request req;
    MPI_Ialltoallv(send, sc.data(), sd.data(), MPI_FLOAT, recv, rc.data(), rd.data(), MPI_FLOAT,
                   MPI_COMM_WORLD, &req);
    wait(req, what);
    long long sent = 0, received = 0;
    for (int r = 0; r < size_; ++r)
      if (r != rank_) sent += sc[static_cast<std::size_t>(r)], received += rc[static_cast<std::size_t>(r)];
    count(sent * 4, received * 4);
  }

  std::vector<std::vector<uint8_t>> gather_to_writer(const std::vector<uint8_t>& bytes,
                                                     const char* what) override {
    long long mine = size_of(bytes);
    std::vector<long long> sizes(static_cast<std::size_t>(size_));
    MPI_Request req;
    MPI_Igather(&mine, 1, MPI_LONG_LONG, sizes.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req);
    wait(req, what);
    const Layout in = layout(rank_ == 0 ? sizes : std::vector<long long>(size_, 0), what);
    std::vector<uint8_t> all(static_cast<std::size_t>(in.total));
    MPI_Igatherv(bytes.data(), static_cast<int>(mine), MPI_BYTE, all.data(), in.counts.data(),
                 in.displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    wait(req, what);
    if (rank_ != 0) {
      count(mine, 0);
      return {};
    }
    count(0, in.total - mine);
    return split(all, in);
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

  // Where each rank's part lies in one buffer (MPI counts are ints: one collective carries < 2 GiB).
  struct Layout {
    std::vector<int> counts, displs;
    long long total = 0;
  };
  static long long size_of(const std::vector<uint8_t>& bytes) { return static_cast<long long>(bytes.size()); }
  static Layout layout(const std::vector<long long>& sizes, const char* what) {
    Layout l;
    for (long long n : sizes) {
      GTPO_CHECK(l.total + n < (1LL << 31), "collective '", what, "': more than 2 GiB in one exchange");
      l.counts.push_back(static_cast<int>(n));
      l.displs.push_back(static_cast<int>(l.total));
      l.total += n;
    }
    return l;
  }
  static std::vector<std::vector<uint8_t>> split(const std::vector<uint8_t>& all, const Layout& l) {
    std::vector<std::vector<uint8_t>> parts(l.counts.size());
    for (std::size_t r = 0; r < parts.size(); ++r)
      parts[r].assign(all.begin() + l.displs[r], all.begin() + l.displs[r] + l.counts[r]);
    return parts;
  }
  // MPI counts and offsets are ints: one exchange carries fewer than 2^31 elements.
  std::vector<int> ints(const std::vector<int64_t>& v, const char* what) const {
    GTPO_CHECK(static_cast<int>(v.size()) == size_, "collective '", what, "': ", v.size(), " ranges for ",
               size_, " ranks");
    std::vector<int> out;
    for (int64_t x : v) {
      GTPO_CHECK(x >= 0 && x < (1LL << 31), "collective '", what,
                 "': more than 2^31 elements in one exchange");
      out.push_back(static_cast<int>(x));
    }
    return out;
  }
  // OUT[r] is the size this rank sends rank r; returns the sizes every rank sends this one.
  std::vector<long long> exchange_sizes(const std::vector<long long>& out, const char* what) {
    std::vector<long long> in(static_cast<std::size_t>(size_));
    MPI_Request req;
    MPI_Ialltoall(out.data(), 1, MPI_LONG_LONG, in.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD, &req);
    wait(req, what);
    return in;
  }
  void count(long long sent, long long received) {
    traffic_.sent += static_cast<uint64_t>(sent);
    traffic_.received += static_cast<uint64_t>(received);
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
