// NCCL for data-parallel training on GPUs (docs/distributed.md): wraps the MPI communicator (host
// collectives, bootstrap, abort) and sums device buffers with ncclAllReduce, one GPU per rank. The ring
// all-reduce leaves the same bits on every rank and, for a fixed rank count and topology, on every run.
// Like the MPI path, every wait is polled against train.collective_timeout_s; on expiry the NCCL
// communicator is aborted and the job ended with a message. UNVERIFIED: written and compiled without a
// multi-GPU machine (docs/distributed.md, "What is verified").
#if defined(GTPO_WITH_NCCL)
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/dist/communicator.h"
#include "runtime/error.h"

namespace gtpo::cuda {
namespace {

class NcclCommunicator final : public dist::Communicator {
 public:
  NcclCommunicator(std::unique_ptr<dist::Communicator> host, double timeout_s)
      : host_(std::move(host)), timeout_s_(timeout_s) {
    ncclUniqueId id;
    if (host_->rank() == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::vector<uint8_t> bytes(sizeof id);
    if (host_->rank() == 0) std::memcpy(bytes.data(), &id, sizeof id);
    const auto all = host_->allgather(host_->rank() == 0 ? bytes : std::vector<uint8_t>{}, "nccl bootstrap");
    GTPO_CHECK(all[0].size() == sizeof id, "nccl bootstrap: rank 0 sent no unique id");
    std::memcpy(&id, all[0].data(), sizeof id);
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    // Nonblocking init, so that a rank that never joins ends in the timeout below, not a hang.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    check(ncclCommInitRankConfig(&comm_, host_->size(), id, host_->rank(), &config), "ncclCommInitRankConfig");
    wait_nccl("nccl init");
  }
  ~NcclCommunicator() override {
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& bytes, const char* what) override {
    return host_->allgather(bytes, what);
  }
  std::vector<std::vector<uint8_t>> alltoall(const std::vector<std::vector<uint8_t>>& to_each,
                                             const char* what) override {
    return host_->alltoall(to_each, what);
  }
  std::vector<std::vector<uint8_t>> gather_to_writer(const std::vector<uint8_t>& bytes,
                                                     const char* what) override {
    return host_->gather_to_writer(bytes, what);
  }
  dist::Traffic traffic() const override { return host_->traffic(); }
  [[noreturn]] void abort(const std::string& message) override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    host_->abort(message);
    std::_Exit(1);  // not reached: the host communicator's abort ends the process
  }

  bool allreduce_device_sum(float* data, std::size_t n, const char* what) override {
    // The gradients were written on the backend's stream: wait for them before NCCL reads.
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    check(ncclAllReduce(data, data, n, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
    wait_stream(what);
    return true;
  }

 private:
  void check(ncclResult_t r, const char* call) {
    if (r != ncclSuccess && r != ncclInProgress)
      abort(std::string(call) + " failed: " + ncclGetErrorString(r) + " (" + ncclGetLastError(comm_) + ")");
  }
  void check_cuda(cudaError_t e, const char* call) {
    if (e != cudaSuccess) abort(std::string(call) + " failed: " + cudaGetErrorString(e));
  }
  // Polls until the communicator is ready (no operation in progress), against the deadline.
  void wait_nccl(const char* what) {
    poll(what, [&] {
      ncclResult_t state = ncclSuccess;
      check(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
      check(state, what);
      return state == ncclSuccess;
    });
  }
  void wait_stream(const char* what) {
    poll(what, [&] {
      ncclResult_t state = ncclSuccess;
      check(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
      check(state, what);
      const cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaErrorNotReady) return false;
      check_cuda(q, "cudaStreamQuery");
      return true;
    });
  }
  template <class Done>
  void poll(const char* what, Done done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s_);
    for (int polls = 0; !done(); ++polls) {
      if (timeout_s_ > 0 && std::chrono::steady_clock::now() > deadline)
        abort(std::string("NCCL collective '") + what + "' did not complete within train.collective_timeout_s = " +
              std::to_string(timeout_s_) + " s: another rank died or hangs; aborting the job");
      if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::unique_ptr<dist::Communicator> host_;
  double timeout_s_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

const bool registered = [] {
  dist::register_device_communicator([](std::unique_ptr<dist::Communicator> host, double timeout_s) {
    return std::unique_ptr<dist::Communicator>(std::make_unique<NcclCommunicator>(std::move(host), timeout_s));
  });
  return true;
}();

}  // namespace
}  // namespace gtpo::cuda
#endif  // GTPO_WITH_NCCL
