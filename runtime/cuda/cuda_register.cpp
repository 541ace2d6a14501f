// The CUDA backend joins the registry from here (runtime/backend.h: register_backend_probe), so the
// runtime library never names it. CMake links gtpo_cuda as a whole archive so this initialiser is kept.
#include "runtime/backend.h"
#include "runtime/cuda/cuda_backend.h"

namespace gtpo::cuda {
namespace {
const bool registered = [] {
  register_backend_probe(Device::cuda, [] { return static_cast<Backend*>(cuda_backend_if_available()); });
  return true;
}();
}  // namespace
}  // namespace gtpo::cuda
