// Reductions over an axis, broadcasts along an axis, strided copies, permutes and the sum of squares.
//
// reduce_sum and sum_squares add in an order fixed by the problem size alone: reduce_sum has one thread
// per output walking its axis in index order (the CPU's order, so its results are the CPU's bits), and
// sum_squares splits into size-determined chunks reduced by fixed shuffle trees. No atomics anywhere.
#include <climits>

#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_index_math.cuh"

namespace gtpo::cuda {

namespace {
constexpr int kThreads = 256;

// out[o, i] = scale * sum_l x[o, l, i]. Threads of a warp take neighbouring i, so for inner > 1 each step
// over l reads a contiguous run.
__global__ void reduce_sum_kernel(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                                  float scale) {
  const int64_t n = outer * inner;
  for (int64_t j = first_index(); j < n; j += index_step()) out[j] = reduce_sum_at(x, len, inner, scale, j);
}

// out[o, l, i] = scale * x[o, i]
__global__ void expand_axis_kernel(const float* x, float* out, int64_t outer, int64_t len, int64_t inner,
                                   float scale) {
  const int64_t n = outer * len * inner;
  for (int64_t j = first_index(); j < n; j += index_step())
    out[j] = ieee::mul(scale, x[expand_axis_source(len, inner, j)]);
}

// The copy_2d cases cudaMemcpy2DAsync refuses (a pitch below the row width, or above its limit).
__global__ void copy_2d_kernel(char* dst, int64_t dst_pitch, const char* src, int64_t src_pitch, int64_t rows,
                               int64_t width) {
  const int64_t n = rows * width;
  for (int64_t j = first_index(); j < n; j += index_step()) {
    const int64_t r = j / width;
    const int64_t c = j - r * width;
    dst[r * dst_pitch + c] = src[r * src_pitch + c];
  }
}

__global__ void permute_kernel(const float* x, float* out, PermutePlan plan) {
  for (int64_t j = first_index(); j < plan.numel; j += index_step()) out[j] = x[permute_source(plan, j)];
}

// Pass 1: block b writes the sum of squares of its chunk. Thread t takes elements t, t + 256, ... of the
// chunk (coalesced), then the block tree combines the 256 partial sums; both orders depend on n only.
__global__ void sum_squares_partials_kernel(const float* x, int64_t n, int64_t chunk, double* partials) {
  __shared__ double shared[32];
  const int64_t begin = blockIdx.x * chunk;
  const int64_t end = begin + chunk < n ? begin + chunk : n;
  double acc = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = x[i];
    acc += v * v;  // exact product in double, so fusing it into an FMA would not change the sum
  }
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// Pass 2: one block adds the partials, strided over its threads, then through the same tree.
__global__ void sum_squares_final_kernel(const double* partials, int64_t count, double* result) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) *result = total;
}
}  // namespace

void CudaBackend::reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  const int64_t n = outer * inner;
  if (n <= 0) return;
  reduce_sum_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_of(*this)>>>(x, out, outer, len, inner, scale);
  GTPO_CUDA_CHECK_LAUNCH();
}

void CudaBackend::expand_axis(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  const int64_t n = outer * len * inner;
  if (n <= 0) return;
  expand_axis_kernel<<<grid_for(n, kThreads), kThreads, 0, stream_of(*this)>>>(x, out, outer, len, inner, scale);
  GTPO_CUDA_CHECK_LAUNCH();
}

void CudaBackend::copy_2d(void* dst, int64_t dst_row_stride, const void* src, int64_t src_row_stride, int64_t rows,
                          int64_t cols, size_t elem_size) {
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
  copy_2d_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(static_cast<char*>(dst), dst_pitch,
                                                                  static_cast<const char*>(src), src_pitch, rows,
                                                                  width);
  GTPO_CUDA_CHECK_LAUNCH();
}

void CudaBackend::permute(const float* x, float* out, const std::vector<int64_t>& shape,
                          const std::vector<int64_t>& perm) {
  const PermutePlan plan = make_permute_plan(shape, perm);
  if (plan.numel <= 0) return;
  permute_kernel<<<grid_for(plan.numel, kThreads), kThreads, 0, stream_of(*this)>>>(x, out, plan);
  GTPO_CUDA_CHECK_LAUNCH();
}

double CudaBackend::sum_squares(const float* x, int64_t n) {
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
