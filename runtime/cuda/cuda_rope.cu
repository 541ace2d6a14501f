// Rotary position embedding, half-split convention (Hugging Face Llama's rotate_half).
//
// One block per row (token): its threads first form the row's cos/sin table in shared memory, then
// rotate every (head, pair) of the row with it, so the double-precision trigonometry runs once per
// (token, frequency) rather than once per head. Angles are formed and their cos/sin taken in double and
// rounded once to float, as on the CPU; the rotation itself is fp32, unfused.
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/cuda/cuda_rope_kernels.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

// head_dim is even (the op checks); with an odd one the last element of each head would be left unwritten,
// as on the CPU.
void CudaBackend::rope(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                       int64_t head_dim, const RopeFrequencies& freq, bool inverse) {
  GTPO_PRIMITIVE("rope");
  const int64_t half = head_dim / 2;
  if (rows <= 0 || heads <= 0 || half <= 0) return;
  if (half > kMaxRopeHalf) fail("cuda rope: head_dim ", head_dim, " is larger than supported (", 2 * kMaxRopeHalf, ")");
  const size_t shared_bytes = rope_shared_bytes(half);
  GTPO_LAUNCH(rope_kernel, row_grid(rows), kRopeThreads, shared_bytes, stream_of(*this), x, positions, out,
              rows, heads, head_dim, freq, inverse);
}

}  // namespace gtpo::cuda
