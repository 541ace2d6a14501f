#include <algorithm>
#include <array>
#include <cstdlib>
#include <mutex>

#include "runtime/backend.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"

namespace gtpo {

// Host buffers: plain aligned memory unless a device has a faster kind (CudaBackend: page-locked).
void* Backend::allocate_host(size_t bytes) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  GTPO_CHECK(p != nullptr, "out of memory: could not allocate ", bytes, " bytes of host memory");
  return p;
}
void Backend::free_host(void* ptr) { std::free(ptr); }

int64_t Backend::gemm_b_panel_width(int64_t, int64_t) const { return 0; }

bool Backend::supports(Capability) const { return false; }

// The optional primitives' defaults: reached only by a caller that skipped supports().
void Backend::swiglu_forward(const float*, const float*, float*, int64_t) {
  fail("swiglu_forward: the ", name(), " backend has no fused SwiGLU (ask supports(Capability::fused_swiglu))");
}
void Backend::swiglu_backward(const float*, const float*, const float*, float*, float*, int64_t) {
  fail("swiglu_backward: the ", name(), " backend has no fused SwiGLU (ask supports(Capability::fused_swiglu))");
}

namespace {
constexpr size_t kDevices = 2;

struct Registry {
  std::array<Backend*, kDevices> backends{&cpu_backend(), nullptr};
  std::array<BackendProbe, kDevices> probes{};
  std::array<std::once_flag, kDevices> probed;
};

Registry& registry() {
  static Registry r;
  return r;
}

Backend* lookup(Device device) {
  Registry& r = registry();
  const size_t i = static_cast<size_t>(device);
  if (r.probes[i] != nullptr) std::call_once(r.probed[i], [&] { r.backends[i] = r.probes[i](); });
  return r.backends[i];
}
}  // namespace

void register_backend_probe(Device device, BackendProbe probe) {
  registry().probes[static_cast<size_t>(device)] = probe;
}

bool backend_built(Device device) {
  return device == Device::cpu || registry().probes[static_cast<size_t>(device)] != nullptr;
}

bool device_available(Device device) { return lookup(device) != nullptr; }

Backend& backend_for(Device device) {
  Backend* backend = lookup(device);
  if (!backend) {
    if (device == Device::cuda && backend_built(device))
      fail("device cuda is not available: no GPU is visible to this process (check nvidia-smi, "
           "CUDA_VISIBLE_DEVICES and GTPO_DISABLE_CUDA)");
    if (device == Device::cuda)
      fail("device cuda is not available: this build has no CUDA backend (rebuild with GTPO_CUDA=ON where "
           "nvcc is installed)");
    fail("device ", device_name(device), " is not available");
  }
  return *backend;
}

}  // namespace gtpo
