#include "runtime/cpu/cpu_backend.h"

#include <cstdlib>
#include <cstring>

#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {
constexpr size_t kAlignment = 64;  // one cache line; also AVX-512 friendly

void* aligned_raw_alloc(size_t bytes) {
  return std::aligned_alloc(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
}
}  // namespace

CpuBackend::CpuBackend() : allocator_(aligned_raw_alloc, [](void* p) { std::free(p); }) {}

CpuBackend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

void CpuBackend::configure(const BackendOptions& options) {
  if (options.matmul_precision != MatmulPrecision::fp32)
    fail("matmul_precision: ", matmul_precision_name(options.matmul_precision),
         " needs device: cuda (tf32 and bf16 are GPU-only; the CPU backend computes in fp32)");
  options_ = options;
}

void* CpuBackend::allocate(size_t bytes) { return allocator_.allocate(bytes); }
void CpuBackend::deallocate(void* ptr, size_t bytes) { allocator_.deallocate(ptr, bytes); }

void CpuBackend::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  GTPO_PRIMITIVE("copy_from_host");
  if (bytes) std::memcpy(dst, host_src, bytes);
}
void CpuBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  GTPO_PRIMITIVE("copy_to_host");
  if (bytes) std::memcpy(host_dst, src, bytes);
}
void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  GTPO_PRIMITIVE("copy");
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void CpuBackend::fill(float* dst, float value, int64_t n) {
  GTPO_PRIMITIVE("fill");
  parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) { std::fill(dst + b, dst + e, value); });
}
void CpuBackend::fill_i32(int32_t* dst, int32_t value, int64_t n) {
  GTPO_PRIMITIVE("fill_i32");
  std::fill(dst, dst + n, value);
}

}  // namespace gtpo
