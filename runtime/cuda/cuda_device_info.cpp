#include "runtime/cuda/cuda_device_info.h"

#include <cuda_runtime.h>

#include "runtime/error.h"

namespace gtpo::cuda {

DeviceInfo device_info(int device_index) {
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, device_index);
  if (status != cudaSuccess) {
    cudaGetLastError();
    fail("cuda: cannot query GPU ", device_index, ": ", cudaGetErrorString(status));
  }
  DeviceInfo info;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.total_memory_bytes = prop.totalGlobalMem;
  cudaDriverGetVersion(&info.driver_version);
  cudaRuntimeGetVersion(&info.runtime_version);
  return info;
}

}  // namespace gtpo::cuda
