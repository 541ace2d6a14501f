#include "runtime/dist/communicator.h"

#include <cstdio>
#include <cstdlib>

#include "runtime/error.h"

namespace gtpo::dist {

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& bytes, const char*) override {
    return {bytes};
  }
  void exchange(const float* send, const Ranges& to, float* recv, const Ranges& from, Device where,
                const char* what) override {
    GTPO_CHECK(where == Device::cpu && to.count.at(0) == from.count.at(0), "collective '", what,
               "': bad ranges");
    std::memcpy(recv + from.at[0], send + to.at[0], static_cast<std::size_t>(to.count[0]) * sizeof(float));
  }
  std::vector<std::vector<uint8_t>> gather_to_writer(const std::vector<uint8_t>& bytes,
                                                     const char*) override {
    return {bytes};
  }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "gtpo: %s\n", message.c_str());
    std::exit(1);
  }
};

// The rank count the launcher announced (OpenMPI, MPICH/Hydra and PMIx launchers, Slurm's srun).
int launched_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS"}) {
    if (const char* v = std::getenv(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

}  // namespace

#if defined(GTPO_WITH_MPI)
std::unique_ptr<Communicator> make_mpi_communicator(double timeout_s);  // mpi_communicator.cpp
#endif

namespace {
DeviceCommunicatorFactory g_device_factory = nullptr;
}

void register_device_communicator(DeviceCommunicatorFactory factory) { g_device_factory = factory; }

std::unique_ptr<Communicator> make_device_communicator(double timeout_s, bool on_device) {
  std::unique_ptr<Communicator> host = make_communicator(timeout_s);
  if (!on_device || host->size() == 1 || g_device_factory == nullptr) return host;
  return g_device_factory(std::move(host), timeout_s);
}

Communicator& single_process() {
  static SingleProcess instance;
  return instance;
}

std::unique_ptr<Communicator> make_communicator(double timeout_s) {
  const int ranks = launched_ranks();
  if (ranks <= 1) return std::make_unique<SingleProcess>();
#if defined(GTPO_WITH_MPI)
  return make_mpi_communicator(timeout_s);
#else
  (void)timeout_s;
  fail("launched as ", ranks, " ranks, but this gtpo was built without MPI: install libopenmpi-dev "
            "(scripts/setup.sh) and rebuild, or run a single process (docs/distributed.md)");
#endif
}

bool any_rank(Communicator& comm, bool flag, const char* what) {
  if (comm.size() == 1) return flag;
  for (const std::vector<uint8_t>& part : comm.allgather({static_cast<uint8_t>(flag)}, what))
    if (!part.empty() && part[0]) return true;
  return false;
}

Share share_of(int64_t count, int rank, int size) {
  return {count * rank / size, count * (rank + 1) / size};
}

void ByteReader::take(void* out, std::size_t n) {
  GTPO_CHECK(at_ + n <= bytes_.size(), "distributed: a message is shorter than expected (", bytes_.size(),
             " bytes); ranks run different builds or configs?");
  if (n) std::memcpy(out, bytes_.data() + at_, n);
  at_ += n;
}

}  // namespace gtpo::dist
