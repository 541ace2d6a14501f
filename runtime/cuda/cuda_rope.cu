// Rotary position embedding, half-split convention (Hugging Face Llama's rotate_half).
//
// One block per row (token): its threads first form the row's cos/sin table in shared memory, then
// rotate every (head, pair) of the row with it, so the double-precision trigonometry runs once per
// (token, frequency) rather than once per head. Angles are formed and their cos/sin taken in double and
// rounded once to float, as on the CPU; the rotation itself is fp32, unfused.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_row_math.cuh"

namespace gtpo::cuda {

namespace {

constexpr int kRopeThreads = 128;
constexpr int64_t kMaxRopeHalf = 4096;  // the cos/sin table (2 * half floats) must fit in 48 KiB of shared memory

__global__ void rope_kernel(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                            int64_t head_dim, float theta, bool inverse) {
  extern __shared__ float table[];  // cos in [0, half), signed sin in [half, 2 half)
  const int64_t half = head_dim / 2;
  float* cs = table;
  float* sn = table + half;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    __syncthreads();  // the previous row's table is no longer read
    const int32_t pos = positions[r];
    for (int64_t d = threadIdx.x; d < half; d += blockDim.x)
      row_math::rope_cos_sin(pos, row_math::rope_inv_freq(d, head_dim, theta), inverse, &cs[d], &sn[d]);
    __syncthreads();
    // Each thread reads both elements of a pair before writing them: x == out is safe.
    const int64_t pairs = heads * half;
    for (int64_t i = threadIdx.x; i < pairs; i += blockDim.x) {
      const int64_t h = i / half;
      const int64_t d = i - h * half;
      const int64_t base = (r * heads + h) * head_dim;
      float lo, hi;
      row_math::rope_rotate(x[base + d], x[base + d + half], cs[d], sn[d], &lo, &hi);
      out[base + d] = lo;
      out[base + d + half] = hi;
    }
  }
}

}  // namespace

// head_dim is even (the op checks); with an odd one the last element of each head would be left unwritten,
// as on the CPU.
void CudaBackend::rope(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                       int64_t head_dim, float theta, bool inverse) {
  const int64_t half = head_dim / 2;
  if (rows <= 0 || heads <= 0 || half <= 0) return;
  if (half > kMaxRopeHalf) fail("cuda rope: head_dim ", head_dim, " is larger than supported (", 2 * kMaxRopeHalf, ")");
  const size_t shared_bytes = static_cast<size_t>(2 * half) * sizeof(float);
  rope_kernel<<<row_grid(rows), kRopeThreads, shared_bytes, stream_of(*this)>>>(x, positions, out, rows, heads,
                                                                                head_dim, theta, inverse);
  GTPO_CUDA_CHECK_LAUNCH();
}

}  // namespace gtpo::cuda
