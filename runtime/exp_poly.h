// The polynomial core of the CPU's and the GPU's float exp (Cephes expf): one copy for both backends, so
// a change to it changes both, and the emulated kernel tests (tests/cuda_emulated) prove the CUDA kernels
// still give the CPU's bits. Plain IEEE arithmetic through cuda::ieee (the _rn intrinsics on the device,
// which nvcc never fuses into FMAs; the plain operators on the host, where -ffp-contract=off holds and the
// CPU loops still vectorise).
#pragma once
#include <cstdint>

#ifndef GTPO_HD
#ifdef __CUDACC__
#define GTPO_HD __host__ __device__ __forceinline__
#else
#define GTPO_HD inline __attribute__((always_inline))
#endif
#endif

#include "runtime/cuda/cuda_ieee.cuh"

namespace gtpo::fp {

struct ExpParts {
  float n;    // the integer n of t = n ln2 + r
  float e_r;  // e^r, |r| <= ln2/2
};

// For t >= -87 (and at most what the caller's 2^n can represent); the caller applies 2^n.
GTPO_HD ExpParts exp_parts(float t) {
  using namespace gtpo::cuda::ieee;
  const float n = sub(add(mul(t, 1.44269504088896341f), 12582912.0f), 12582912.0f);  // round to nearest
  float r = sub(t, mul(n, 0.693359375f));  // ln2 in two parts, so n * ln2 is exact enough
  r = sub(r, mul(n, -2.12194440e-4f));
  float p = 1.9875691500e-4f;
  p = add(mul(p, r), 1.3981999507e-3f);
  p = add(mul(p, r), 8.3334519073e-3f);
  p = add(mul(p, r), 4.1665795894e-2f);
  p = add(mul(p, r), 1.6666665459e-1f);
  p = add(mul(p, r), 5.0000001201e-1f);
  p = add(add(mul(p, mul(r, r)), r), 1.0f);
  return {n, p};
}

}  // namespace gtpo::fp
