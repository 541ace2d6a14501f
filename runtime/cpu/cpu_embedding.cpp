// Embedding gather (forward) and deterministic scatter-add (backward).
#include <cstring>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {
// Tables with fewer rows than this have their gradient rows cut into blocks of kColumnBlock columns.
constexpr int64_t kFewTableRows = 256;
constexpr int64_t kColumnBlock = 16;  // a cache line of floats
}  // namespace

void CpuBackend::embedding_forward(const float* table, const int32_t* ids, float* out, int64_t n, int64_t dim) {
  GTPO_PRIMITIVE("embedding_forward");
  const size_t row_bytes = static_cast<size_t>(dim) * sizeof(float);
  parallel_for(n, grain_for(dim), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::memcpy(out + r * dim, table + static_cast<int64_t>(ids[r]) * dim, row_bytes);
  });
}

void CpuBackend::embedding_backward(const int32_t* ids, const float* gy, float* gtable, int64_t n, int64_t dim,
                                    int64_t vocab) {
  GTPO_PRIMITIVE("embedding_backward");
  // A stable counting sort groups the positions of each id (CSR: first[v]..first[v+1] in `order`) while
  // keeping them in position order. Each element of the table is then owned by one chunk, which adds its
  // positions in that order: the same additions, in the same order, as the serial loop, whatever the thread count.
  std::vector<int64_t> first(static_cast<size_t>(vocab) + 1, 0);
  for (int64_t r = 0; r < n; ++r) ++first[static_cast<size_t>(ids[r]) + 1];
  for (int64_t v = 0; v < vocab; ++v) first[static_cast<size_t>(v) + 1] += first[static_cast<size_t>(v)];
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::vector<int64_t> fill(first.begin(), first.end() - 1);
  for (int64_t r = 0; r < n; ++r) order[static_cast<size_t>(fill[static_cast<size_t>(ids[r])]++)] = r;

  // A token embedding's table has few rows (a character vocabulary of ~20), each summing thousands of
  // positions: its rows are cut into column blocks too, so that they spread over the threads (one chunk of
  // 512 rows was one thread). A packed batch's gathers have a row per position and keep whole rows. Each
  // element is the same chain of additions, in position order, however the work is cut.
  const int64_t block = vocab < kFewTableRows ? std::min(dim, kColumnBlock) : dim;
  const int64_t blocks = block > 0 ? (dim + block - 1) / block : 0;
  const int64_t per_row = n / std::max<int64_t>(vocab, 1) + 1;  // positions per table row, on average
  parallel_for(vocab * blocks, grain_for(per_row * block), [&](int64_t ub, int64_t ue) {
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t v = u / blocks, c0 = (u % blocks) * block, c1 = std::min(dim, c0 + block);
      float* dst = gtable + v * dim;
      for (int64_t c = c0; c < c1; ++c) dst[c] = 0.0f;
      for (int64_t k = first[static_cast<size_t>(v)]; k < first[static_cast<size_t>(v) + 1]; ++k) {
        const float* src = gy + order[static_cast<size_t>(k)] * dim;
        for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
      }
    }
  });
}

}  // namespace gtpo
