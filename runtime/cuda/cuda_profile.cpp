// The CUDA backend's per-primitive clock (Backend::set_profiling): an event recorded on the stream before and
// after each primitive, so a primitive's time is the device's time between the two, whatever the host did
// meanwhile. Pairs are resolved (cudaEventElapsedTime) by profile() and every kMaxPending calls, and their
// events reused, so a long profiled run holds a bounded number of events.
#include <cuda_runtime.h>

#include "runtime/cuda/cuda_backend.h"
#include "runtime/error.h"

namespace gtpo::cuda {

namespace {
constexpr size_t kMaxPending = 4096;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    fail("CUDA error in ", what, " (per-primitive timing): ", cudaGetErrorString(status));
}
}  // namespace

CUevent_st* CudaBackend::take_event() {
  if (!free_events_.empty()) {
    CUevent_st* e = free_events_.back();
    free_events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  check(cudaEventCreate(&e), "cudaEventCreate");
  return e;
}

void CudaBackend::start_timing(const char* name) {
  timing_name_ = name;
  timing_start_ = take_event();
  check(cudaEventRecord(timing_start_, reinterpret_cast<cudaStream_t>(stream())), "cudaEventRecord");
}

void CudaBackend::stop_timing() {
  CUevent_st* stop = take_event();
  check(cudaEventRecord(stop, reinterpret_cast<cudaStream_t>(stream())), "cudaEventRecord");
  pending_timings_.push_back({timing_name_, timing_start_, stop});
  if (pending_timings_.size() >= kMaxPending) flush_timings();
}

void CudaBackend::flush_timings() {
  if (pending_timings_.empty()) return;
  check(cudaEventSynchronize(pending_timings_.back().stop), "cudaEventSynchronize");
  for (const PendingTiming& t : pending_timings_) {
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, t.start, t.stop), "cudaEventElapsedTime");
    if (profiling()) add_timing(t.name, 1e-3 * ms);
    free_events_.push_back(t.start);
    free_events_.push_back(t.stop);
  }
  pending_timings_.clear();
}

}  // namespace gtpo::cuda
