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
    reduce_sum_chunks_kernel<<<grid, kLayoutThreads, 0, stream_of(*this)>>>(x, partials, n, len, inner);
    GTPO_CUDA_CHECK_LAUNCH();
    reduce_sum_finish_kernel<<<grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream_of(*this)>>>(
        partials, out, n, chunks, scale);
    GTPO_CUDA_CHECK_LAUNCH();
    return;
  }
  reduce_sum_kernel<<<grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream_of(*this)>>>(x, out, outer, len, inner,
                                                                                          scale);
  GTPO_CUDA_CHECK_LAUNCH();
}

void CudaBackend::expand_axis(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  GTPO_PRIMITIVE("expand_axis");
  const int64_t n = outer * len * inner;
  if (n <= 0) return;
  expand_axis_kernel<<<grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream_of(*this)>>>(x, out, outer, len, inner,
                                                                                           scale);
  GTPO_CUDA_CHECK_LAUNCH();
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
  copy_2d_kernel<<<grid_for(n, kLayoutThreads), kLayoutThreads, 0, stream>>>(static_cast<char*>(dst), dst_pitch,
                                                                  static_cast<const char*>(src), src_pitch, rows,
                                                                  width);
  GTPO_CUDA_CHECK_LAUNCH();
}

void CudaBackend::permute(const float* x, float* out, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& perm) {
  GTPO_PRIMITIVE("permute");
  const PermutePlan plan = make_permute_plan(shape, perm);
  if (plan.numel <= 0) return;
  permute_kernel<<<grid_for(plan.numel, kLayoutThreads), kLayoutThreads, 0, stream_of(*this)>>>(x, out, plan);
  GTPO_CUDA_CHECK_LAUNCH();
}

double CudaBackend::sum_squares(const float* x, int64_t n) {
  GTPO_PRIMITIVE("sum_squares");
  const SumSquaresPlan plan = plan_sum_squares(n);
  if (plan.blocks == 0) return 0.0;
  const cudaStream_t stream = stream_of(*this);
  // partials[0, blocks) then the result, in scratch: nothing else runs between the two kernels.
  auto* partials = static_cast<double*>(scratch(static_cast<size_t>(plan.blocks + 1) * sizeof(double)));
  double* result = partials + plan.blocks;
  sum_squares_partials_kernel<<<static_cast<unsigned>(plan.blocks), kSumSquaresThreads, 0, stream>>>(
      x, n, plan.chunk, partials);
  GTPO_CUDA_CHECK_LAUNCH();
  sum_squares_final_kernel<<<1, kSumSquaresThreads, 0, stream>>>(partials, plan.blocks, result);
  GTPO_CUDA_CHECK_LAUNCH();
  double total = 0.0;
  GTPO_CUDA_CHECK(cudaMemcpyAsync(&total, result, sizeof(double), cudaMemcpyDeviceToHost, stream));
  GTPO_CUDA_CHECK(cudaStreamSynchronize(stream));
  return total;
}

}  // namespace gtpo::cuda
