// What a CUDA device is, for reports (gtpo bench: the GPU's name picks its peak FLOP/s for MFU). Plain C++:
// only built with the CUDA backend (GTPO_WITH_CUDA); callers guard their include with that macro.
#pragma once
#include <cstddef>
#include <string>

namespace gtpo::cuda {

struct DeviceInfo {
  std::string name;  // "NVIDIA H200", as cudaGetDeviceProperties reports it
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  size_t total_memory_bytes = 0;
  int driver_version = 0, runtime_version = 0;  // e.g. 12040 for 12.4
};

// Throws gtpo::Error when the device cannot be queried (no driver, no such device).
DeviceInfo device_info(int device_index = 0);

}  // namespace gtpo::cuda
