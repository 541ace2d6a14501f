// Row-wise softmax and log-softmax over the last dim.
//
// One block per row. The row max is exact whatever the order; the sums are accumulated in double (as on
// the CPU) per thread over a strided slice, then combined by the fixed-tree block_sum, so a row's result
// depends only on its length. Every pass re-reads the row instead of caching it: rows up to a 152k
// vocabulary do not fit in shared memory, and the re-reads mostly hit L2.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_softmax_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::softmax_forward(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax) {
  GTPO_PRIMITIVE("softmax_forward");
  if (rows <= 0 || cols <= 0) return;
  GTPO_LAUNCH(softmax_forward_kernel, row_grid(rows), row_threads(cols), 0, stream_of(*this), x, y, rows,
              cols, log_softmax);
}

void CudaBackend::softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols,
                                   bool log_softmax) {
  GTPO_PRIMITIVE("softmax_backward");
  if (rows <= 0 || cols <= 0) return;
  GTPO_LAUNCH(softmax_backward_kernel, row_grid(rows), row_threads(cols), 0, stream_of(*this), y, gy, gx,
              rows, cols, log_softmax);
}

}  // namespace gtpo::cuda
