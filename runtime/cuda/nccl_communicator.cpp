// NCCL for data-parallel training on GPUs (docs/distributed.md): wraps the MPI communicator (host
// collectives, bootstrap, abort) and exchanges device buffers with grouped ncclSend/ncclRecv, one GPU per
// rank: the reduce-scatter and all-gather of the ZeRO-1 step (runtime/dist/zero.cpp), whose sums are then
// made in rank order on the device, so the bits are the same on every rank and every run. Like the MPI path,
// every wait is polled against train.collective_timeout_s; on expiry the NCCL communicator is aborted and the
// job ended with a message. UNVERIFIED: written and compiled without a multi-GPU machine
// (docs/distributed.md, "What is verified").
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
  bool reaches(Device device) const override { return device == Device::cuda || host_->reaches(device); }
  void exchange(const float* send, const dist::Ranges& to, float* recv, const dist::Ranges& from,
                Device where, const char* what) override {
    if (where != Device::cuda) return host_->exchange(send, to, recv, from, where, what);
    // The buffers were written on the backend's stream: wait for them before NCCL reads.
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const int me = rank();
    check(ncclGroupStart(), "ncclGroupStart");
    for (int r = 0; r < size(); ++r) {
      const std::size_t k = static_cast<std::size_t>(r);
      if (r == me) continue;
      if (to.count[k] > 0)
        check(
            ncclSend(send + to.at[k], static_cast<std::size_t>(to.count[k]), ncclFloat32, r, comm_, stream_),
            "ncclSend");
      if (from.count[k] > 0)
        check(ncclRecv(recv + from.at[k], static_cast<std::size_t>(from.count[k]), ncclFloat32, r, comm_,
                       stream_),
              "ncclRecv");
      traffic_.sent += static_cast<uint64_t>(to.count[k]) * 4;
      traffic_.received += static_cast<uint64_t>(from.count[k]) * 4;
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
    const std::size_t self = static_cast<std::size_t>(me);
    if (to.count[self] > 0)
      check_cuda(
          cudaMemcpyAsync(recv + from.at[self], send + to.at[self],
                          static_cast<std::size_t>(to.count[self]) * 4, cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpyAsync");
    wait_stream(what);
  }
  std::vector<std::vector<uint8_t>> gather_to_writer(const std::vector<uint8_t>& bytes,
                                                     const char* what) override {
    return host_->gather_to_writer(bytes, what);
  }
  dist::Traffic traffic() const override {
    const dist::Traffic host = host_->traffic();
    return {host.sent + traffic_.sent, host.received + traffic_.received};
  }
  [[noreturn]] void abort(const std::string& message) override {
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
    host_->abort(message);
    std::_Exit(1);  // not reached: the host communicator's abort ends the process
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
