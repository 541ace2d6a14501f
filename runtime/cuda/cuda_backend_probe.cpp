// The CUDA side of the backend seam. This build compiles and links against the CUDA runtime so that
// CI proves the toolchain works; the device kernels themselves arrive with the CUDA backend issue.
// Until then no CUDA backend is registered, so device_available(Device::cuda) stays false and GPU
// test rows skip with a message.
#include <cuda_runtime_api.h>

namespace gtpo::cuda {

// Number of visible CUDA devices, 0 when the driver or a device is missing.
int visible_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

}  // namespace gtpo::cuda
