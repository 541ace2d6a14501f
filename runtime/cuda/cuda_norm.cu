// LayerNorm and RMSNorm over the last dim.
//
// Row statistics: one block per row, double accumulators (as on the CPU) over strided slices combined by
// the fixed-tree block_sum; two-pass variance for LayerNorm. mean and rstd are stored as float and the
// backward uses exactly those, so forward and backward agree on xhat.
//
// Weight and bias gradients are column sums over all rows, which the row blocks cannot produce without
// atomics. They take two more kernels: each block of pass 1 owns a run of columns (one per thread,
// coalesced across the warp) and one chunk of rows, and sums that chunk in row order into a double
// partial; pass 2 adds each column's partials in chunk order. The chunking depends only on `rows`, so
// the result is deterministic.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_norm_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

namespace {

// gweight (and gbias, when not null) over all rows; mean == nullptr for RMSNorm.
void norm_param_grads(CudaBackend& be, const float* x, const float* mean, const float* rstd, const float* gy,
                      float* gweight, float* gbias, int64_t rows, int64_t cols) {
  if (cols <= 0) return;
  const RowChunks rc = row_chunks(rows);
  double* partial_w = nullptr;
  double* partial_b = nullptr;
  if (rc.chunks > 0) {
    const int64_t per = rc.chunks * cols;
    partial_w = static_cast<double*>(be.scratch(static_cast<size_t>(per * (gbias ? 2 : 1)) * sizeof(double)));
    partial_b = gbias ? partial_w + per : nullptr;
    const dim3 grid(column_blocks(cols), static_cast<unsigned>(rc.chunks));
    GTPO_LAUNCH(norm_column_partials_kernel, grid, kColumnThreads, 0, stream_of(be), x, mean, rstd, gy,
                partial_w, partial_b, rows, cols, rc.rows_per_chunk);
  }
  GTPO_LAUNCH(norm_column_finish_kernel, grid_for(cols, kColumnThreads), kColumnThreads, 0, stream_of(be),
              partial_w, partial_b, gweight, gbias, rc.chunks, cols);
}

}  // namespace

// cols == 0 still writes mean and rstd (0 and 1/sqrt(eps)), as the CPU does.
void CudaBackend::layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, float* mean,
                                     float* rstd, int64_t rows, int64_t cols, float eps) {
  GTPO_PRIMITIVE("layer_norm_forward");
  if (rows <= 0) return;
  GTPO_LAUNCH(layer_norm_forward_kernel, row_grid(rows), row_threads(cols), 0, stream_of(*this), x, weight,
              bias, y, mean, rstd, rows, cols, eps);
}

// rows == 0 still overwrites gweight and gbias with zeros.
void CudaBackend::layer_norm_backward(const float* x, const float* weight, const float* mean, const float* rstd,
                                      const float* gy, float* gx, float* gweight, float* gbias, int64_t rows,
                                      int64_t cols) {
  GTPO_PRIMITIVE("layer_norm_backward");
  if (cols <= 0) return;
  if (rows > 0) {
    GTPO_LAUNCH(layer_norm_backward_kernel, row_grid(rows), row_threads(cols), 0, stream_of(*this), x, weight,
                mean, rstd, gy, gx, rows, cols);
  }
  norm_param_grads(*this, x, mean, rstd, gy, gweight, gbias, rows, cols);
}

void CudaBackend::rms_norm_forward(const float* x, const float* weight, float* y, float* rstd, int64_t rows,
                                   int64_t cols, float eps) {
  GTPO_PRIMITIVE("rms_norm_forward");
  if (rows <= 0) return;
  GTPO_LAUNCH(rms_norm_forward_kernel, row_grid(rows), row_threads(cols), 0, stream_of(*this), x, weight, y,
              rstd, rows, cols, eps);
}

void CudaBackend::rms_norm_backward(const float* x, const float* weight, const float* rstd, const float* gy, float* gx,
                                    float* gweight, int64_t rows, int64_t cols) {
  GTPO_PRIMITIVE("rms_norm_backward");
  if (cols <= 0) return;
  if (rows > 0) {
    GTPO_LAUNCH(rms_norm_backward_kernel, row_grid(rows), row_threads(cols), 0, stream_of(*this), x, weight,
                rstd, gy, gx, rows, cols);
  }
  norm_param_grads(*this, x, nullptr, rstd, gy, gweight, nullptr, rows, cols);
}

}  // namespace gtpo::cuda
