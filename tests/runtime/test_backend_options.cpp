// Backend options on the CPU: fp32 is the only precision; tf32 and bf16 are GPU-only and say so.
#include <catch2/catch.hpp>

#include "runtime/backend.h"
#include "runtime/error.h"

using namespace gtpo;
using Catch::Matchers::Contains;

TEST_CASE("cpu backend: tf32 and bf16 are GPU-only errors, fp32 and deterministic either way are accepted",
          "[backend]") {
  Backend& cpu = backend_for(Device::cpu);
  const BackendOptions before = cpu.options();
  CHECK_THROWS_WITH(cpu.configure({MatmulPrecision::bf16, true}), Contains("matmul_precision: bf16 needs device: cuda"));
  CHECK_THROWS_WITH(cpu.configure({MatmulPrecision::tf32, true}), Contains("matmul_precision: tf32 needs device: cuda"));
  CHECK(cpu.options().matmul_precision == before.matmul_precision);  // a refused configure changes nothing
  CHECK_NOTHROW(cpu.configure({MatmulPrecision::fp32, false}));
  CHECK_FALSE(cpu.options().deterministic);
  CHECK_NOTHROW(cpu.configure({}));
  CHECK(cpu.options().deterministic);
  CHECK(std::string(matmul_precision_name(MatmulPrecision::tf32)) == "tf32");
}

TEST_CASE("backend_for(cuda) either works or says why the device is missing", "[backend]") {
  if (device_available(Device::cuda)) {
    CHECK(backend_for(Device::cuda).device() == Device::cuda);
    return;
  }
  CHECK_THROWS_WITH(backend_for(Device::cuda), Contains("device cuda is not available"));
}

TEST_CASE("backends register themselves: a CUDA build links the CUDA probe, and asks for it only on demand",
          "[backend]") {
  CHECK(backend_built(Device::cpu));
  CHECK(backend_for(Device::cpu).supports(Capability::fused_swiglu));
#ifdef GTPO_WITH_CUDA
  // runtime/cuda/cuda_register.cpp reached the registry although the runtime library never names it.
  CHECK(backend_built(Device::cuda));
  if (!device_available(Device::cuda))
    CHECK_THROWS_WITH(backend_for(Device::cuda), Contains("no GPU is visible"));
#else
  CHECK_FALSE(backend_built(Device::cuda));
  CHECK_THROWS_WITH(backend_for(Device::cuda), Contains("this build has no CUDA backend"));
#endif
}
