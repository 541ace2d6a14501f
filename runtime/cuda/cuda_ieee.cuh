// Unfused IEEE arithmetic for kernels that must round where the CPU rounds. The CPU backend is built with
// -ffp-contract=off, but nvcc fuses a*b + c into one FMA by default (that host flag never reaches device
// code, and nvcc's -fmad switch is per file, not per expression). On the device these are the _rn
// intrinsics, which nvcc never fuses; on the host they are the plain operators, so a host program (the
// emulated tests) compares the same expressions with the CPU backend bit for bit.
#pragma once
#include <cmath>

#ifndef GTPO_HD
#define GTPO_HD __host__ __device__ __forceinline__
#endif

namespace gtpo::cuda::ieee {

#ifdef __CUDA_ARCH__
GTPO_HD float add(float a, float b) { return __fadd_rn(a, b); }
GTPO_HD float sub(float a, float b) { return __fsub_rn(a, b); }
GTPO_HD float mul(float a, float b) { return __fmul_rn(a, b); }
// Correctly rounded even under --use_fast_math, which would otherwise approximate '/' and sqrtf.
GTPO_HD float div(float a, float b) { return __fdiv_rn(a, b); }
GTPO_HD float sqrt(float a) { return __fsqrt_rn(a); }
GTPO_HD double add(double a, double b) { return __dadd_rn(a, b); }
GTPO_HD double sub(double a, double b) { return __dsub_rn(a, b); }
GTPO_HD double mul(double a, double b) { return __dmul_rn(a, b); }
#else
GTPO_HD float add(float a, float b) { return a + b; }
GTPO_HD float sub(float a, float b) { return a - b; }
GTPO_HD float mul(float a, float b) { return a * b; }
GTPO_HD float div(float a, float b) { return a / b; }
GTPO_HD float sqrt(float a) { return std::sqrt(a); }
GTPO_HD double add(double a, double b) { return a + b; }
GTPO_HD double sub(double a, double b) { return a - b; }
GTPO_HD double mul(double a, double b) { return a * b; }
#endif

}  // namespace gtpo::cuda::ieee
