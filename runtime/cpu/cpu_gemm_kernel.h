// The CPU GEMM's register kernel: C[i, j] = sum over p of op(A)[i, p] * B[p, j], with B row-major [k, n].
//
// Every element is one chain of fused multiply-adds over p in index order, starting from zero. Nothing else
// enters it: not the tile a thread was given, not how k was blocked, not the vector width. So a row of C
// has the same bits whether it was computed alone (a decode step) or among thousands (a training batch),
// with 1 or 64 threads, and on AVX-512, AVX2+FMA or scalar code (IEEE fma is exactly rounded everywhere).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

namespace gtpo::cpu_gemm {

// ---- one vector of floats, with a lane mask for the last partial columns ------------------------
#if defined(__AVX512F__)
struct Vec {
  static constexpr int64_t kLanes = 16;
  static constexpr int64_t kRows = 12;  // 12 rows x 2 vectors = 24 accumulators of AVX-512's 32 registers
  using V = __m512;
  using Mask = __mmask16;
  static Mask mask(int64_t lanes) { return lanes >= 16 ? Mask(0xFFFF) : Mask((1u << lanes) - 1u); }
  static V zero() { return _mm512_setzero_ps(); }
  static V splat(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static void store(float* p, V v, Mask m) { _mm512_mask_storeu_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct Vec {
  static constexpr int64_t kLanes = 8;
  static constexpr int64_t kRows = 6;  // 6 x 2 = 12 accumulators of AVX2's 16 registers
  using V = __m256;
  using Mask = __m256i;
  static Mask mask(int64_t lanes) {
    alignas(32) static const int32_t ramp[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int32_t>(lanes)),
                              _mm256_load_si256(reinterpret_cast<const __m256i*>(ramp)));
  }
  static V zero() { return _mm256_setzero_ps(); }
  static V splat(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V load(const float* p, Mask m) { return _mm256_maskload_ps(p, m); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static void store(float* p, V v, Mask m) { _mm256_maskstore_ps(p, m, v); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
};
#else
// No FMA instruction: std::fma gives the same exactly rounded result, slowly (a build for such a CPU pays
// that to keep the bits of every other build).
struct Vec {
  static constexpr int64_t kLanes = 4;
  static constexpr int64_t kRows = 4;
  struct V {
    float x[4];
  };
  using Mask = int64_t;  // lanes in use
  static Mask mask(int64_t lanes) { return lanes >= 4 ? 4 : lanes; }
  static V zero() { return V{{0.0f, 0.0f, 0.0f, 0.0f}}; }
  static V splat(float x) { return V{{x, x, x, x}}; }
  static V load(const float* p) { return load(p, 4); }
  static V load(const float* p, Mask m) {
    V v = zero();
    for (int64_t l = 0; l < m; ++l) v.x[l] = p[l];
    return v;
  }
  static void store(float* p, V v) { store(p, v, 4); }
  static void store(float* p, V v, Mask m) {
    for (int64_t l = 0; l < m; ++l) p[l] = v.x[l];
  }
  static V fma(V a, V b, V c) {
    for (int l = 0; l < 4; ++l) c.x[l] = std::fma(a.x[l], b.x[l], c.x[l]);
    return c;
  }
  static V mul(V a, V b) {
    for (int l = 0; l < 4; ++l) a.x[l] *= b.x[l];
    return a;
  }
};
#endif

// Columns a panel covers: two vectors.
constexpr int64_t kPanel = 2 * Vec::kLanes;

// op(A) as the kernel reads it: element (i, p) of A [m, k], or of the transpose of a stored [k, m].
struct OperandA {
  const float* a;
  int64_t lda;
  bool trans;
};

// What a tile does with its sums: the first depth block starts from zero, later ones continue the sums they
// left in C; the last block applies alpha (and beta with the caller's original C, kept elsewhere).
struct Step {
  bool first, last;
  float alpha;
};

// c[r, 0..cols) for MR rows of op(A) from row i, over depth [p0, p1), NV vectors of columns from b, which
// points at row p0 of B (rows ldb apart).
// kEdge: the last vector is partial (mask), or NV = 2 with fewer than two whole vectors.
template <int64_t MR, int64_t NV, bool kTransA, bool kEdge>
void tile(const OperandA& A, int64_t i, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t p0,
          int64_t p1, int64_t cols, const Step& step) {
  using V = typename Vec::V;
  typename Vec::Mask masks[NV];
  for (int64_t t = 0; t < NV; ++t) masks[t] = Vec::mask(cols - t * Vec::kLanes);
  V acc[MR][NV];
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t t = 0; t < NV; ++t) {
      float* cp = c + r * ldc + t * Vec::kLanes;
      acc[r][t] = step.first ? Vec::zero() : (kEdge ? Vec::load(cp, masks[t]) : Vec::load(cp));
    }
  for (int64_t p = p0; p < p1; ++p) {
    V bv[NV];
    const float* bp = b + (p - p0) * ldb;
    for (int64_t t = 0; t < NV; ++t)
      bv[t] = kEdge ? Vec::load(bp + t * Vec::kLanes, masks[t]) : Vec::load(bp + t * Vec::kLanes);
    for (int64_t r = 0; r < MR; ++r) {
      const float av = kTransA ? A.a[p * A.lda + i + r] : A.a[(i + r) * A.lda + p];
      const V as = Vec::splat(av);
      for (int64_t t = 0; t < NV; ++t) acc[r][t] = Vec::fma(as, bv[t], acc[r][t]);
    }
  }
  if (step.last && step.alpha != 1.0f) {
    const V alpha = Vec::splat(step.alpha);
    for (int64_t r = 0; r < MR; ++r)
      for (int64_t t = 0; t < NV; ++t) acc[r][t] = Vec::mul(alpha, acc[r][t]);
  }
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t t = 0; t < NV; ++t) {
      float* cp = c + r * ldc + t * Vec::kLanes;
      if (kEdge)
        Vec::store(cp, acc[r][t], masks[t]);
      else
        Vec::store(cp, acc[r][t]);
    }
}

// MR rows against one panel of up to kPanel columns: picks the vector count and the edge variant.
template <int64_t MR, bool kTransA>
void rows_panel(const OperandA& A, int64_t i, const float* b, int64_t ldb, float* c, int64_t ldc, int64_t p0,
                int64_t p1, int64_t cols, const Step& step) {
  if (cols == kPanel)
    tile<MR, 2, kTransA, false>(A, i, b, ldb, c, ldc, p0, p1, cols, step);
  else if (cols == Vec::kLanes)
    tile<MR, 1, kTransA, false>(A, i, b, ldb, c, ldc, p0, p1, cols, step);
  else if (cols > Vec::kLanes)
    tile<MR, 2, kTransA, true>(A, i, b, ldb, c, ldc, p0, p1, cols, step);
  else
    tile<MR, 1, kTransA, true>(A, i, b, ldb, c, ldc, p0, p1, cols, step);
}

// Rows [i0, i1) of op(A) against one panel: whole kRows tiles, then the remainder in halving tiles.
template <bool kTransA>
void rows_range(const OperandA& A, int64_t i0, int64_t i1, const float* b, int64_t ldb, float* c, int64_t ldc,
                int64_t p0, int64_t p1, int64_t cols, const Step& step) {
  constexpr int64_t R = Vec::kRows;
  int64_t i = i0;
  for (; i + R <= i1; i += R)
    rows_panel<R, kTransA>(A, i, b, ldb, c + (i - i0) * ldc, ldc, p0, p1, cols, step);
  if constexpr (R > 8) {
    if (i + 8 <= i1) {
      rows_panel<8, kTransA>(A, i, b, ldb, c + (i - i0) * ldc, ldc, p0, p1, cols, step);
      i += 8;
    }
  }
  if (i + 4 <= i1) {
    rows_panel<4, kTransA>(A, i, b, ldb, c + (i - i0) * ldc, ldc, p0, p1, cols, step);
    i += 4;
  }
  if (i + 2 <= i1) {
    rows_panel<2, kTransA>(A, i, b, ldb, c + (i - i0) * ldc, ldc, p0, p1, cols, step);
    i += 2;
  }
  if (i < i1) rows_panel<1, kTransA>(A, i, b, ldb, c + (i - i0) * ldc, ldc, p0, p1, cols, step);
}

}  // namespace gtpo::cpu_gemm
