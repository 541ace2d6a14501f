// Embedding gather (forward) and deterministic scatter-add (backward).
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_embedding_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::embedding_forward(const float* table, const int32_t* ids, float* out, int64_t n, int64_t dim) {
  GTPO_PRIMITIVE("embedding_forward");
  if (n <= 0 || dim <= 0) return;
  GTPO_LAUNCH(embedding_forward_kernel, grid_for(n * dim, kGatherThreads), kGatherThreads, 0,
              stream_of(*this), table, ids, out, n, dim);
}

void CudaBackend::embedding_backward(const int32_t* ids, const float* gy, float* gtable, int64_t n, int64_t dim,
                                     int64_t vocab) {
  GTPO_PRIMITIVE("embedding_backward");
  if (dim <= 0 || vocab <= 0) return;
  // All-zero bytes are +0.0f. Queued on the stream before the kernel, which relies on it.
  GTPO_CUDA_CHECK(cudaMemsetAsync(gtable, 0, static_cast<size_t>(vocab * dim) * sizeof(float), stream_of(*this)));
  if (n <= 0) return;
  const ScatterShape shape = scatter_shape(dim, vocab);
  const dim3 grid(static_cast<unsigned>(shape.column_blocks), static_cast<unsigned>(shape.buckets));
  GTPO_LAUNCH(embedding_backward_kernel, grid, kScatterThreads, 0, stream_of(*this), ids, gy, gtable, n, dim,
              shape.bucket_rows);
}

}  // namespace gtpo::cuda
