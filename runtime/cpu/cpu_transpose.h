// Transposed copies for the CPU kernels: the GEMM's packing of a transposed B and attention's key tiles.
// Pure copies, so every layout gives the same bits; with AVX, 8 x 8 blocks go through registers (a strided
// store per float was 8% of a hidden-256 RL step in the GEMM, and half of attention's backward tile work).
#pragma once
#include <cstdint>

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace gtpo::cpu_transpose {

#if defined(__AVX__)
// dst[c * ld_dst + r] = src[r * ld_src + c] for r, c < 8.
inline void block8x8(const float* src, int64_t ld_src, float* dst, int64_t ld_dst) {
  __m256 r[8];
  for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(src + q * ld_src);
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  // Row c of the result: element c of each of the eight source rows.
  const __m256 out[8] = {_mm256_permute2f128_ps(s0, s4, 0x20), _mm256_permute2f128_ps(s1, s5, 0x20),
                         _mm256_permute2f128_ps(s2, s6, 0x20), _mm256_permute2f128_ps(s3, s7, 0x20),
                         _mm256_permute2f128_ps(s0, s4, 0x31), _mm256_permute2f128_ps(s1, s5, 0x31),
                         _mm256_permute2f128_ps(s2, s6, 0x31), _mm256_permute2f128_ps(s3, s7, 0x31)};
  for (int c = 0; c < 8; ++c) _mm256_storeu_ps(dst + c * ld_dst, out[c]);
}
#endif

// dst[c * ld_dst + r] = src[r * ld_src + c] for a [rows, cols] source.
inline void copy(const float* src, int64_t ld_src, int64_t rows, int64_t cols, float* dst, int64_t ld_dst) {
  int64_t r0 = 0;
#if defined(__AVX__)
  const int64_t cols8 = cols / 8 * 8;
  for (; r0 + 8 <= rows; r0 += 8) {
    for (int64_t c = 0; c < cols8; c += 8)
      block8x8(src + r0 * ld_src + c, ld_src, dst + c * ld_dst + r0, ld_dst);
    for (int64_t r = r0; r < r0 + 8; ++r)
      for (int64_t c = cols8; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
  }
#endif
  for (int64_t r = r0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * ld_dst + r] = src[r * ld_src + c];
}

}  // namespace gtpo::cpu_transpose
