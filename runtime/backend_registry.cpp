#include <array>

#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

namespace {
std::array<Backend*, 2>& registry() {
  // The CPU backend always exists; the CUDA backend registers itself when it finds a device.
  static std::array<Backend*, 2> backends{&cpu_backend(), nullptr};
  return backends;
}
}  // namespace

void register_backend(Device device, Backend* backend) { registry()[static_cast<size_t>(device)] = backend; }

bool device_available(Device device) { return registry()[static_cast<size_t>(device)] != nullptr; }

Backend& backend_for(Device device) {
  Backend* backend = registry()[static_cast<size_t>(device)];
  if (!backend) {
    if (device == Device::cuda)
      fail("device cuda is not available: this build has no CUDA backend or no GPU was found ",
           "(build with GTPO_CUDA=ON on a machine with a GPU)");
    fail("device ", device_name(device), " is not available");
  }
  return *backend;
}

}  // namespace gtpo
