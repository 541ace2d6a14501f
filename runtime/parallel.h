// Deterministic data parallelism for the CPU backend.
//
// Work is cut into chunks whose boundaries depend only on the problem size, never on the thread
// count, and every output element is produced by exactly one chunk in a fixed order. That is what
// makes results bitwise identical with 1 or 2 (or 64) threads.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace gtpo {

// Calls body(begin, end) over [0, n) in chunks of `grain` items, in parallel when n is large enough.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, Body&& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  if (chunks == 1 || omp_in_parallel()) {
    body(int64_t{0}, n);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * grain;
    body(begin, std::min(n, begin + grain));
  }
}

// A grain that gives each chunk roughly `work_per_chunk` scalar operations when each item costs
// `work_per_item`.
inline int64_t grain_for(int64_t work_per_item, int64_t work_per_chunk = 32768) {
  return std::max<int64_t>(1, work_per_chunk / std::max<int64_t>(work_per_item, 1));
}

}  // namespace gtpo
