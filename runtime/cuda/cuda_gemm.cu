// GEMM through cuBLAS. The row-major request is mapped onto cuBLAS's column-major convention by
// to_column_major (cuda_index_math.cuh); this file picks the data and compute types per precision mode.
//
// Determinism comes from cuBLAS itself: configure() fixes the workspace, forbids atomics and reduced
// precision reductions, so a given shape always runs the same kernel with the same reduction order.
#include <cuda_bf16.h>

#include <climits>

#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_index_math.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

namespace {
constexpr int kThreads = 256;

// C = beta * C over a strided batch of [rows, cols] matrices, for k == 0 (an empty product). beta == 0
// writes zeros even over NaN, as a GEMM with beta == 0 does.
__global__ void scale_matrices_kernel(float* c, int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t n,
                                      float beta) {
  for (int64_t j = first_index(); j < n; j += index_step()) {
    float& dst = c[strided_offset(j, rows, cols, ld, stride)];
    dst = beta == 0.0f ? 0.0f : __fmul_rn(dst, beta);
  }
}

// Dense bf16 copy of a strided batch of row-major fp32 matrices (round to nearest even).
__global__ void pack_bf16_kernel(const float* src, int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t n,
                                 __nv_bfloat16* dst) {
  for (int64_t j = first_index(); j < n; j += index_step())
    dst[j] = __float2bfloat16_rn(src[strided_offset(j, rows, cols, ld, stride)]);
}

int as_int(int64_t v, const char* what) {
  GTPO_CHECK(v >= 0 && v <= INT_MAX, "cuda gemm: ", what, " = ", v, " does not fit cuBLAS's 32-bit int");
  return static_cast<int>(v);
}

cublasOperation_t op_of(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

void run_cublas(cublasHandle_t handle, const ColumnMajorGemm& cm, float alpha, float beta, float* c,
                cudaDataType input_type, cublasComputeType_t compute) {
  const int m = as_int(cm.m, "m"), n = as_int(cm.n, "n"), k = as_int(cm.k, "k");
  const int lda = as_int(cm.a.ld, "ld of b"), ldb = as_int(cm.b.ld, "ld of a"), ldc = as_int(cm.ldc, "ldc");
  if (cm.batch == 1) {
    GTPO_CUBLAS_CHECK(cublasGemmEx(handle, op_of(cm.trans_a), op_of(cm.trans_b), m, n, k, &alpha, cm.a.data,
                                   input_type, lda, cm.b.data, input_type, ldb, &beta, c, CUDA_R_32F, ldc, compute,
                                   CUBLAS_GEMM_DEFAULT));
  } else {
    GTPO_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, op_of(cm.trans_a), op_of(cm.trans_b), m, n, k, &alpha, cm.a.data, input_type, lda, cm.a.stride,
        cm.b.data, input_type, ldb, cm.b.stride, &beta, c, CUDA_R_32F, ldc, cm.stride_c, as_int(cm.batch, "batch"),
        compute, CUBLAS_GEMM_DEFAULT));
  }
}
}  // namespace

void CudaBackend::gemm(const GemmArgs& g) {
  GTPO_PRIMITIVE("gemm");
  if (g.m <= 0 || g.n <= 0 || g.batch <= 0) return;
  const cudaStream_t stream = stream_of(*this);
  if (g.k <= 0) {
    // Nothing to multiply (and cuBLAS would reject ld = 0 of an empty operand): C = beta * C.
    if (g.beta == 1.0f) return;
    const int64_t n = g.batch * g.m * g.n;
    GTPO_LAUNCH(scale_matrices_kernel, grid_for(n, kThreads), kThreads, 0, stream, g.c, g.m, g.n, g.ldc,
                g.stride_c, n, g.beta);
    return;
  }

  const MatmulPrecision precision = options().matmul_precision;
  if (precision != MatmulPrecision::bf16) {
    // fp32: plain single precision under the default math mode configure() set. tf32: inputs rounded to
    // tf32 on tensor cores, accumulation in fp32.
    const cublasComputeType_t compute =
        precision == MatmulPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    run_cublas(cublas_of(*this), to_column_major(g), g.alpha, g.beta, g.c, CUDA_R_32F, compute);
    return;
  }

  // bf16: A and B are rounded into dense copies in scratch (leading dimension = row length, stride = one
  // matrix, or 0 when shared), so the conversion touches only the elements the product reads, whatever
  // the caller's ld and strides. C stays fp32 and is accumulated in fp32.
  const int64_t rows_a = stored_rows_a(g), cols_a = stored_cols_a(g);
  const int64_t rows_b = stored_rows_b(g), cols_b = stored_cols_b(g);
  const int64_t copies_a = packed_copies(g.batch, g.stride_a), copies_b = packed_copies(g.batch, g.stride_b);
  const int64_t count_a = copies_a * rows_a * cols_a, count_b = copies_b * rows_b * cols_b;
  const size_t align = 256;  // keeps B's copy as aligned as a fresh allocation
  const size_t bytes_a = (static_cast<size_t>(count_a) * sizeof(__nv_bfloat16) + align - 1) / align * align;
  const size_t bytes_b = static_cast<size_t>(count_b) * sizeof(__nv_bfloat16);
  auto* base = static_cast<char*>(scratch(bytes_a + bytes_b));
  auto* packed_a = reinterpret_cast<__nv_bfloat16*>(base);
  auto* packed_b = reinterpret_cast<__nv_bfloat16*>(base + bytes_a);
  GTPO_LAUNCH(pack_bf16_kernel, grid_for(count_a, kThreads), kThreads, 0, stream, g.a, rows_a, cols_a, g.lda,
              g.stride_a, count_a, packed_a);
  GTPO_LAUNCH(pack_bf16_kernel, grid_for(count_b, kThreads), kThreads, 0, stream, g.b, rows_b, cols_b, g.ldb,
              g.stride_b, count_b, packed_b);
  const GemmOperand a{packed_a, cols_a, copies_a > 1 ? rows_a * cols_a : 0};
  const GemmOperand b{packed_b, cols_b, copies_b > 1 ? rows_b * cols_b : 0};
  run_cublas(cublas_of(*this), to_column_major(g, a, b), g.alpha, g.beta, g.c, CUDA_R_16BF, CUBLAS_COMPUTE_32F);
}

}  // namespace gtpo::cuda
