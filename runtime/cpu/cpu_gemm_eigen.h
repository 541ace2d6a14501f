// Eigen's GEMM on shape-fixed tiles of C (cpu_gemm_eigen.cpp): the CPU backend's path for large weight
// gradients. C = alpha * op(A) op(B) + beta * C over every batch entry.
#pragma once
#include "runtime/backend.h"

namespace gtpo {
void gemm_eigen_tiles(const GemmArgs& g);

// Whether CpuBackend::gemm hands this product to gemm_eigen_tiles rather than to its register kernel
// (cpu_gemm.cpp): op(A) = A^T, B in place and a C of more than 16,384 elements, or a depth and a width
// (k and n) both of at least 512.
bool gemm_goes_to_eigen(const GemmArgs& g);
}  // namespace gtpo
