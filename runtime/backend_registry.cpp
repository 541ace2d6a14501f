#include <array>

#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"
#ifdef GTPO_WITH_CUDA
#include "runtime/cuda/cuda_backend.h"
#endif

namespace gtpo {

namespace {
std::array<Backend*, 2>& registry() {
  // The CPU backend always exists. The CUDA backend is created on first request, so CPU-only runs never
  // initialise the CUDA driver.
  static std::array<Backend*, 2> backends{&cpu_backend(), nullptr};
#ifdef GTPO_WITH_CUDA
  static const bool cuda_probed = [] {
    if (Backend* cuda = cuda::cuda_backend_if_available()) backends[static_cast<size_t>(Device::cuda)] = cuda;
    return true;
  }();
  (void)cuda_probed;
#endif
  return backends;
}
}  // namespace

void register_backend(Device device, Backend* backend) { registry()[static_cast<size_t>(device)] = backend; }

bool device_available(Device device) { return registry()[static_cast<size_t>(device)] != nullptr; }

Backend& backend_for(Device device) {
  Backend* backend = registry()[static_cast<size_t>(device)];
  if (!backend) {
    if (device == Device::cuda)
#ifdef GTPO_WITH_CUDA
      fail("device cuda is not available: no GPU is visible to this process (check nvidia-smi, "
           "CUDA_VISIBLE_DEVICES and GTPO_DISABLE_CUDA)");
#else
      fail("device cuda is not available: this build has no CUDA backend (rebuild with GTPO_CUDA=ON where "
           "nvcc is installed)");
#endif
    fail("device ", device_name(device), " is not available");
  }
  return *backend;
}

}  // namespace gtpo
