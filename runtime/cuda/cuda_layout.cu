// Reductions over an axis, broadcasts along an axis, strided copies, permutes and the sum of squares.
//
// reduce_sum and sum_squares add in an order fixed by the problem size alone: reduce_sum adds chunks of 64
// inputs, then the chunk sums in order (cuda_index_math.cuh; the CPU's order, so its results are the CPU's
// bits), with one thread per output or, for a tall reduction, one per output and chunk, and
// sum_squares splits into size-determined chunks reduced by fixed shuffle trees. No atomics anywhere.
#include <climits>

#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_layout_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

void CudaBackend::reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  GTPO_PRIMITIVE("reduce_sum");
  const int64_t n = outer * inner;
  if (n <= 0) return;
  if (reduce_sum_in_two_passes(n, len)) {
    const int64_t chunks = reduce_chunks(len);
    float* partials = static_cast<float*>(scratch(static_cast<size_t>(chunks * n) * sizeof(float)));
    const dim3 grid(grid_for(n, kLayoutThreads), static_cast<unsigned>(chunks));
    GTPO_LAUNCH(reduce_sum_chunks_kernel, grid, kLayoutThreads, 0, stream_of(*this), x, partials, n, len,
                inner);
    GTPO_LAUNCH(reduce_sum_finish_kernel, grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream_of(*this),
                partials, out, n, chunks, scale);
    return;
  }
  GTPO_LAUNCH(reduce_sum_kernel, grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream_of(*this), x, out,
              outer, len, inner, scale);
}

void CudaBackend::expand_axis(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  GTPO_PRIMITIVE("expand_axis");
  const int64_t n = outer * len * inner;
  if (n <= 0) return;
  GTPO_LAUNCH(expand_axis_kernel, grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream_of(*this), x, out,
              outer, len, inner, scale);
}

void CudaBackend::copy_2d(void* dst, int64_t dst_row_stride, const void* src, int64_t src_row_stride, int64_t rows,
                          int64_t cols, size_t elem_size) {
  GTPO_PRIMITIVE("copy_2d");
  if (rows <= 0 || cols <= 0 || elem_size == 0) return;
  const int64_t elem = static_cast<int64_t>(elem_size);
  const int64_t width = cols * elem;
  const int64_t dst_pitch = dst_row_stride * elem, src_pitch = src_row_stride * elem;
  if (dst == src && (rows == 1 || dst_pitch == src_pitch)) return;  // a copy onto itself
  const cudaStream_t stream = stream_of(*this);
  if (rows == 1) {
    GTPO_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(width), cudaMemcpyDeviceToDevice, stream));
    return;
  }
  const bool memcpy_ok = dst_pitch >= width && src_pitch >= width && dst_pitch <= INT_MAX && src_pitch <= INT_MAX;
  if (memcpy_ok) {
    GTPO_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<size_t>(dst_pitch), src, static_cast<size_t>(src_pitch),
                                      static_cast<size_t>(width), static_cast<size_t>(rows), cudaMemcpyDeviceToDevice,
                                      stream));
    return;
  }
  const int64_t n = rows * width;
  GTPO_LAUNCH(copy_2d_kernel, grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream, static_cast<char*>(dst),
              dst_pitch, static_cast<const char*>(src), src_pitch, rows, width);
}

void CudaBackend::permute(const float* x, float* out, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& perm) {
  GTPO_PRIMITIVE("permute");
  const PermutePlan plan = make_permute_plan(shape, perm);
  if (plan.numel <= 0) return;
  GTPO_LAUNCH(permute_kernel, grid_for(plan.numel, kLayoutThreads), kLayoutThreads, 0, stream_of(*this), x,
              out, plan);
}

// Each buffer's partials kernel, then its final kernel writing its slot of one device array, all queued on
// the stream; one copy of the array to the host at the end is the only wait.
void CudaBackend::sum_squares_each(const std::vector<const float*>& xs, const std::vector<int64_t>& ns,
                                   double* out) {
  GTPO_PRIMITIVE("sum_squares");
  const size_t count = xs.size();
  if (count == 0) return;
  const cudaStream_t stream = stream_of(*this);
  int64_t most_blocks = 1;
  for (int64_t n : ns) most_blocks = std::max<int64_t>(most_blocks, plan_sum_squares(n).blocks);
  // [count results | most_blocks partials]: the partials are reused buffer after buffer (stream order).
  auto* results = static_cast<double*>(scratch((count + static_cast<size_t>(most_blocks)) * sizeof(double)));
  double* partials = results + count;
  for (size_t b = 0; b < count; ++b) {
    const SumSquaresPlan plan = plan_sum_squares(ns[b]);
    if (plan.blocks == 0) {
      GTPO_CUDA_CHECK(cudaMemsetAsync(results + b, 0, sizeof(double), stream));  // all-zero bits: 0.0
      continue;
    }
    GTPO_LAUNCH(sum_squares_partials_kernel, static_cast<unsigned>(plan.blocks), kSumSquaresThreads, 0,
                stream, xs[b], ns[b], plan.chunk, partials);
    GTPO_LAUNCH(sum_squares_final_kernel, 1, kSumSquaresThreads, 0, stream, partials, plan.blocks,
                results + b);
  }
  GTPO_CUDA_CHECK(cudaMemcpyAsync(out, results, count * sizeof(double), cudaMemcpyDeviceToHost, stream));
  GTPO_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace gtpo::cuda
