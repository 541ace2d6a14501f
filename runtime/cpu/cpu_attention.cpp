// Fused causal attention on the CPU, flash style: scores exist only as [kBlockQ, kBlockK] tiles.
//
// Forward: one task per (batch, q head, query block). Keys are visited in blocks with an online softmax
// (running max m, running sum l, rescaled accumulator), so memory stays O(block^2) per task.
// Backward recomputes the probabilities from the saved lse and runs two passes, each writing only what it owns:
//   pass 1, one task per (batch, kv head, key block): dK and dV of that block, summed over the group's q heads
//           (outer) and then over queries in index order;
//   pass 2, one task per (batch, q head, query block): dQ, summed over keys in index order.
// Every sum therefore has an order fixed by the problem size alone: bitwise identical for any thread count.
// Pass 2 recomputes scores that pass 1 also computed (7 instead of 5 tile products); that is the price of a
// deterministic backward with no atomics and no [T, T] buffer, paid only when there are few (batch, kv
// head) pairs: otherwise one task per pair runs pass 1 over its key blocks in index order and sums dQ as
// it goes, the same chains as pass 2's, so the same bits (attention_backward, "fused").
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/cpu/cpu_attention_decode.h"
#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/cpu_transpose.h"
#include "runtime/cpu/cpu_vec_math.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {

constexpr int64_t kBlockQ = 64;
constexpr int64_t kBlockK = 64;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ---- small dense helpers ------------------------------------------------------------------------

// Element (i, p) of a, stored [m, k] row-major, or with TransA transposed, [k, m]. Only which address holds
// a(i, p) changes, never an operation or its order, so both layouts give the same bits (the backward's P^T
// and dS^T are read in place this way instead of being copied transposed).
template <bool TransA>
inline float a_at(const float* a, int64_t lda, int64_t i, int64_t p) {
  return TransA ? a[p * lda + i] : a[i * lda + p];
}

// c[m, n] += op(a)[m, k] * b[k, n], row-major with leading dims. Every element adds its k products to its
// current value in index order, in every code path (tile or tail), so the result is independent of how the
// matrix is cut. Vectorised across columns, never across the k sum: no reassociation, no -ffast-math.
template <bool TransA>
void rows_acc(int64_t ib, int64_t ie, int64_t jb, int64_t je, int64_t k, const float* a, int64_t lda,
              const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i = ib; i < ie; ++i) {
    float* ci = c + i * ldc;
    for (int64_t p = 0; p < k; ++p) {
      const float av = a_at<TransA>(a, lda, i, p);
      const float* bp = b + p * ldb;
      for (int64_t j = jb; j < je; ++j) ci[j] += av * bp[j];
    }
  }
}

// Explicit SIMD register tile through GCC/Clang vector extensions: auto-vectorisation of the plain loop nest
// proved erratic (stack spills and shuffles, ~2 GFLOP/s). Lane-wise mul then add, exactly the scalar tail's
// arithmetic (no FMA: -ffp-contract=off), so the tile and the tail give identical bits.
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

// The register tile c[i..i+MR, j..j+NV·kLanes) += a[i.., 0..k) b[0..k, j..): MR·NV vector accumulators
// stay in registers over the whole k loop (the scalar tail reloads and stores c for every p).
template <bool TransA, int64_t MR, int64_t NV>
void tile_acc(int64_t i, int64_t j, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
              int64_t ldc) {
  Lanes acc[MR][NV];
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t t = 0; t < NV; ++t) std::memcpy(&acc[r][t], c + (i + r) * ldc + j + t * kLanes, sizeof(Lanes));
  for (int64_t p = 0; p < k; ++p) {
    Lanes bv[NV];
    for (int64_t t = 0; t < NV; ++t) std::memcpy(&bv[t], b + p * ldb + j + t * kLanes, sizeof(Lanes));
    for (int64_t r = 0; r < MR; ++r) {
      const float av = a_at<TransA>(a, lda, i + r, p);
      for (int64_t t = 0; t < NV; ++t) acc[r][t] += av * bv[t];
    }
  }
  for (int64_t r = 0; r < MR; ++r)
    for (int64_t t = 0; t < NV; ++t) std::memcpy(c + (i + r) * ldc + j + t * kLanes, &acc[r][t], sizeof(Lanes));
}

// Rows [i, i + MR) of c: two-vector tiles, then a one-vector tile (a head dim of 16 is one AVX-512 vector,
// which is every n of the P·V, dV, dK and dQ products in the quick start), then the scalar tail.
template <bool TransA, int64_t MR>
void row_block(int64_t i, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
               int64_t ldc) {
  int64_t j = 0;
  for (; j + 2 * kLanes <= n; j += 2 * kLanes) tile_acc<TransA, MR, 2>(i, j, k, a, lda, b, ldb, c, ldc);
  for (; j + kLanes <= n; j += kLanes) tile_acc<TransA, MR, 1>(i, j, k, a, lda, b, ldb, c, ldc);
  if (j < n) rows_acc<TransA>(i, i + MR, j, n, k, a, lda, b, ldb, c, ldc);
}

// c[m, n] += op(a)[m, k] * b[k, n], op(a) = a, or with TransA a stored [k, m] (see a_at).
template <bool TransA = false>
void mm_acc(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
            int64_t ldc) {
  // 8 rows × 2 vectors = 16 accumulators fit AVX-512's 32 registers; AVX2's 16 hold 4 × 2.
  constexpr int64_t kRowsWide = kLanes == 16 ? 8 : 4;
  int64_t i = 0;
  for (; i + kRowsWide <= m; i += kRowsWide) row_block<TransA, kRowsWide>(i, n, k, a, lda, b, ldb, c, ldc);
  for (; i + 4 <= m; i += 4) row_block<TransA, 4>(i, n, k, a, lda, b, ldb, c, ldc);
  for (; i < m; ++i) row_block<TransA, 1>(i, n, k, a, lda, b, ldb, c, ldc);
}

// dst[r, :] = scale * src[r * ld_src, :D] (scale 1 is an exact copy).
void load_rows(const float* src, int64_t ld_src, int64_t rows, int64_t dim, float scale, float* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t d = 0; d < dim; ++d) dst[r * dim + d] = scale * src[r * ld_src + d];
}

// Maps a task index onto a block index so that contiguous runs of tasks (what a static schedule hands each
// thread) mix light and heavy causal blocks: 0, n-1, 1, n-2, ...
inline int64_t interleaved_block(int64_t t, int64_t n) { return (t % 2 == 0) ? t / 2 : n - 1 - t / 2; }

// ---- problem geometry ---------------------------------------------------------------------------

struct Geometry {
  int64_t batch, q_len, kv_len, q_heads, kv_heads, dim, group, offset;
  int64_t q_row, kv_row, kv_batch;  // element strides: query position, key position, kv batch entry
  float scale;
  const int32_t* mask;
  const int32_t* q_range;  // [batch, 2] or null: the queries that attend

  explicit Geometry(const AttentionArgs& a)
      : batch(a.batch), q_len(a.q_len), kv_len(a.kv_len), q_heads(a.q_heads), kv_heads(a.kv_heads),
        dim(a.head_dim), group(a.kv_heads > 0 ? a.q_heads / a.kv_heads : 1), offset(a.kv_len - a.q_len),
        q_row(a.q_heads * a.head_dim), kv_row(a.kv_heads * a.head_dim),
        kv_batch(a.kv_batch_stride > 0 ? a.kv_batch_stride : a.kv_len * a.kv_heads * a.head_dim), scale(a.scale),
        mask(a.key_mask), q_range(a.query_range) {}

  // Queries [q_begin(b), q_end(b)) of entry b attend; the others see no key.
  int64_t q_begin(int64_t b) const { return q_range ? q_range[2 * b] : 0; }
  int64_t q_end(int64_t b) const { return q_range ? q_range[2 * b + 1] : q_len; }
  // The attending part [lo, hi) of queries [i0, i0 + nq) of entry b.
  std::pair<int64_t, int64_t> attending(int64_t b, int64_t i0, int64_t nq) const {
    const int64_t lo = std::clamp(q_begin(b), i0, i0 + nq);
    return {lo, std::clamp(q_end(b), lo, i0 + nq)};
  }

  int64_t q_offset(int64_t b, int64_t i, int64_t h) const { return (b * q_len + i) * q_row + h * dim; }
  int64_t kv_offset(int64_t b, int64_t j, int64_t g) const { return b * kv_batch + j * kv_row + g * dim; }
  int64_t lse_offset(int64_t b, int64_t h) const { return (b * q_heads + h) * q_len; }
  // Keys [0, key_end(i_end)) may be visible to some query below i_end.
  int64_t key_end(int64_t i_end) const { return std::clamp<int64_t>(i_end + offset, 0, kv_len); }
  bool visible(int64_t b, int64_t i, int64_t j) const {
    return j <= i + offset && (mask == nullptr || mask[b * kv_len + j] != 0);
  }
  // Of keys [j0, j0 + nk), query i can see at most the first `visible_end` (exactly those when there is no
  // key mask, the causal limit alone); keys past it are hidden. Loops then skip the per-key test.
  int64_t visible_end(int64_t i, int64_t j0, int64_t nk) const { return std::clamp<int64_t>(i + offset + 1 - j0, 0, nk); }
};

// Per-task scratch, sized once per chunk and reused across its tasks.
struct Tiles {
  std::vector<float> qs, dout, acc, dv, kt, vt, s, dp, m, l, lse, di;
  explicit Tiles(int64_t dim)
      : qs(kBlockQ * dim), dout(kBlockQ * dim), acc(std::max(kBlockQ, kBlockK) * dim), dv(kBlockK * dim),
        kt(dim * kBlockK), vt(dim * kBlockK),
        s(kBlockQ * kBlockK), dp(kBlockQ * kBlockK), m(kBlockQ),
        l(kBlockQ), lse(kBlockQ), di(kBlockQ) {}
};

// The calling thread's scratch tiles for head size `dim`, allocated on first use and reused: parallel_for
// hands out one task per chunk here, and building (and zero-filling) fresh tiles per task cost ~3% of a
// training step. Every tile region a task reads is written by that task first, so reuse cannot leak state.
Tiles& thread_tiles(int64_t dim) {
  thread_local std::unique_ptr<Tiles> tiles;
  thread_local int64_t tiles_dim = -1;
  if (!tiles || tiles_dim != dim) {
    tiles = std::make_unique<Tiles>(dim);
    tiles_dim = dim;
  }
  return *tiles;
}

// Columns a score tile of nk keys is computed over: nk rounded up to whole vectors (within the kBlockK
// columns of storage), so that mm_acc runs register tiles only, never its scalar tail (a quick-start
// sequence of 30 keys has 14 columns past one AVX-512 vector). Each output column is computed on its own,
// so the extra columns cannot change the first nk; nobody reads them.
int64_t wide_columns(int64_t nk) { return std::min(kBlockK, (nk + kLanes - 1) / kLanes * kLanes); }

// kt [D, nk] = keys [j0, j0 + nk) of one kv head, transposed so that score tiles vectorise across keys;
// the columns up to wide_columns(nk) are zero, so that every value a tile product reads was written here.
void load_keys_transposed(const Geometry& g, const float* k, int64_t b, int64_t kv_head, int64_t j0, int64_t nk,
                          float* kt) {
  cpu_transpose::copy(k + g.kv_offset(b, j0, kv_head), g.kv_row, nk, g.dim, kt, kBlockK);
  const int64_t wide = wide_columns(nk);
  for (int64_t d = 0; d < g.dim; ++d) std::fill(kt + d * kBlockK + nk, kt + d * kBlockK + wide, 0.0f);
}

// out[nq, nk] = rows [nq, D] times cols_t [D, nk] (out has kBlockK columns of storage), computed over
// wide_columns(nk) columns; readers read only the [nq, nk] corner.
void tile_product(const Geometry& g, const float* rows, const float* cols_t, int64_t nq, int64_t nk, float* out) {
  const int64_t wide = wide_columns(nk);
  for (int64_t r = 0; r < nq; ++r) std::fill(out + r * kBlockK, out + r * kBlockK + wide, 0.0f);
  mm_acc(nq, wide, g.dim, rows, g.dim, cols_t, kBlockK, out, kBlockK);
}

// Turns the score tile into probabilities p = exp(s - lse) (0 where not visible or where lse = -inf), and,
// with dp = dO . v already in t.dp, into dS = p (dp - D_i), left in t.dp. The exp is the forward's
// (cpu_math::exp_bounded), so p is exactly the forward's probability; without a key mask the loop has no
// branch and vectorises.
void probs_and_dscores(const Geometry& g, Tiles& t, int64_t b, int64_t i0, int64_t j0, int64_t nq, int64_t nk) {
  for (int64_t r = 0; r < nq; ++r) {
    float* s = t.s.data() + r * kBlockK;
    float* dp = t.dp.data() + r * kBlockK;
    const float lse = t.lse[r], di = t.di[r];
    // A row that sees nothing (lse = -inf) has p = 0 everywhere, as its hidden keys do.
    const int64_t vis = lse == kNegInf ? 0 : g.visible_end(i0 + r, j0, nk);
    if (g.mask == nullptr) {
      for (int64_t c = 0; c < vis; ++c) {
        const float p = cpu_math::exp_bounded(s[c] - lse);
        s[c] = p;
        dp[c] = p * (dp[c] - di);
      }
    } else {
      for (int64_t c = 0; c < vis; ++c) {
        const float p = g.visible(b, i0 + r, j0 + c) ? cpu_math::exp_bounded(s[c] - lse) : 0.0f;
        s[c] = p;
        dp[c] = p * (dp[c] - di);
      }
    }
    for (int64_t c = vis; c < nk; ++c) {  // hidden: p = 0, and dS = 0 * (dp - D_i) keeps its sign of zero
      s[c] = 0.0f;
      dp[c] = 0.0f * (dp[c] - di);
    }
  }
}

// Loads the per-query state of a backward tile: scaled queries, dO rows, lse and D_i = dO_i . O_i.
void load_query_side(const Geometry& g, Tiles& t, const float* q, const float* gout, const float* lse,
                     const float* di, int64_t b, int64_t h, int64_t i0, int64_t nq) {
  load_rows(q + g.q_offset(b, i0, h), g.q_row, nq, g.dim, g.scale, t.qs.data());
  load_rows(gout + g.q_offset(b, i0, h), g.q_row, nq, g.dim, 1.0f, t.dout.data());
  for (int64_t r = 0; r < nq; ++r) {
    t.lse[r] = lse[g.lse_offset(b, h) + i0 + r];
    t.di[r] = di[g.lse_offset(b, h) + i0 + r];
  }
}

// Queries [i0, i1) of (entry b, q head h) that see no key: zero output and lse -inf, as a fully masked
// query has.
void idle_queries(const Geometry& g, float* out, float* lse, int64_t b, int64_t h, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) {
    std::fill(out + g.q_offset(b, i, h), out + g.q_offset(b, i, h) + g.dim, 0.0f);
    lse[g.lse_offset(b, h) + i] = kNegInf;
  }
}

// dQ rows [i0, i1) of (entry b, q head h) for queries that see no key: zero.
void idle_query_grads(const Geometry& g, float* gq, int64_t b, int64_t h, int64_t i0, int64_t i1) {
  for (int64_t i = i0; i < i1; ++i) std::fill(gq + g.q_offset(b, i, h), gq + g.q_offset(b, i, h) + g.dim, 0.0f);
}

// ---- forward ------------------------------------------------------------------------------------

// The largest of s[0, n), -inf when n == 0, NaNs skipped. Four running maxima: one chain of dependent
// maxss per key was ~10% of a quick-start forward. Max is exact, so the value is the one-chain value;
// only which of +0 and -0 wins a tie may differ, and m's sign of zero reaches no result (s - m, exp(s - m)
// and m + log l round alike).
inline float row_max(const float* s, int64_t n) {
  float m0 = kNegInf, m1 = kNegInf, m2 = kNegInf, m3 = kNegInf;
  int64_t c = 0;
  for (; c + 4 <= n; c += 4) {
    m0 = std::max(m0, s[c]);
    m1 = std::max(m1, s[c + 1]);
    m2 = std::max(m2, s[c + 2]);
    m3 = std::max(m3, s[c + 3]);
  }
  for (; c < n; ++c) m0 = std::max(m0, s[c]);
  return std::max(std::max(m0, m1), std::max(m2, m3));
}

// One query row's online-softmax step over a tile of nk scores S whose keys past VIS are hidden (a hidden key
// below VIS is already -inf): S becomes exp(s - m) under the new running max M (0 where hidden), and the sum
// L and the accumulator row ACC [d] are rescaled to it. A tile with nothing visible leaves the state as it
// was.
void softmax_step(float* s, int64_t vis, int64_t nk, float& m, float& l, float* acc, int64_t d) {
  const float mx = row_max(s, vis);
  if (mx == kNegInf) {  // nothing visible in this tile: contributes zero, state unchanged
    std::fill(s, s + nk, 0.0f);
    return;
  }
  const float m_new = std::max(m, mx);
  const float alpha = cpu_math::exp_bounded(m - m_new);  // 0 on the first visible tile (acc and l are 0 then)
  // cpu_math::exp_bounded, not libm's scalar expf: the loop vectorises and a masked key's -inf gives 0. The
  // sum is a separate, sequential loop (a fixed order).
  for (int64_t c = 0; c < vis; ++c) s[c] = cpu_math::exp_bounded(s[c] - m_new);
  float sum = 0.0f;  // >= 0 and never -0, so adding a hidden key's +0 would change nothing
  for (int64_t c = 0; c < vis; ++c) sum += s[c];
  std::fill(s + vis, s + nk, 0.0f);
  l = l * alpha + sum;
  m = m_new;
  if (alpha != 1.0f)
    for (int64_t e = 0; e < d; ++e) acc[e] *= alpha;
}

// A query row's output ACC / L and its lse, or zeros and -inf when it saw no key. L by value and ACC const:
// read through the tiles inside the loop, each element reloaded l (O might alias it, for all the compiler
// knew) and divided one at a time, ~25% of a quick-start forward.
void finish_row(const float* acc, float m, float l, int64_t d, float* o, float* lse) {
  if (l > 0.0f) {
    for (int64_t e = 0; e < d; ++e) o[e] = acc[e] / l;
  } else {
    std::fill(o, o + d, 0.0f);
  }
  *lse = l > 0.0f ? m + std::log(l) : kNegInf;
}

void forward_block(const Geometry& g, Tiles& t, const float* q, const float* k, const float* v, float* out,
                   float* lse, int64_t b, int64_t h, int64_t i0, int64_t nq) {
  const int64_t kv_head = h / g.group;
  const int64_t d = g.dim;
  load_rows(q + g.q_offset(b, i0, h), g.q_row, nq, d, g.scale, t.qs.data());
  std::fill(t.acc.begin(), t.acc.begin() + nq * d, 0.0f);  // accumulators: only the first nq rows are used
  std::fill(t.m.begin(), t.m.end(), kNegInf);
  std::fill(t.l.begin(), t.l.end(), 0.0f);
  const int64_t kend = g.key_end(i0 + nq);
  for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
    const int64_t nk = std::min(kBlockK, kend - j0);
    load_keys_transposed(g, k, b, kv_head, j0, nk, t.kt.data());
    tile_product(g, t.qs.data(), t.kt.data(), nq, nk, t.s.data());  // s = (scale q) k^T
    for (int64_t r = 0; r < nq; ++r) {
      float* s = t.s.data() + r * kBlockK;
      // Keys past `vis` are hidden; they cannot raise the max and their probability is 0.
      const int64_t vis = g.visible_end(i0 + r, j0, nk);
      if (g.mask != nullptr)
        for (int64_t c = 0; c < vis; ++c)
          if (!g.visible(b, i0 + r, j0 + c)) s[c] = kNegInf;
      softmax_step(s, vis, nk, t.m[r], t.l[r], t.acc.data() + r * d, d);
    }
    mm_acc(nq, d, nk, t.s.data(), kBlockK, v + g.kv_offset(b, j0, kv_head), g.kv_row, t.acc.data(), d);
  }
  for (int64_t r = 0; r < nq; ++r)
    finish_row(t.acc.data() + r * d, t.m[r], t.l[r], d, out + g.q_offset(b, i0 + r, h),
               lse + g.lse_offset(b, h) + i0 + r);
}

// ---- backward -----------------------------------------------------------------------------------

// dK, dV of keys [j0, j0 + nk) of one kv head, summed over its q heads and every query that sees them.
// With dq_sums ([group, q_len, D], the group's q heads) it also adds each dS tile's dQ terms, dS k, there:
// pass 2 would recompute exactly that tile (same inputs, same arithmetic) and take exactly this product.
// Called for the key blocks in index order, each dQ element is then pass 2's chain (keys in index order,
// from zero; a key a query cannot see adds a zero product, which changes no value), so the bits are the
// same and pass 2 is skipped.
void backward_key_block(const Geometry& g, Tiles& t, const float* q, const float* k, const float* v,
                        const float* gout, const float* lse, const float* di, float* gk, float* gv, float* dq_sums,
                        int64_t b, int64_t kv_head, int64_t j0, int64_t nk) {
  const int64_t d = g.dim;
  std::vector<float>& dk = t.acc;  // [nk, D]
  std::vector<float>& dv = t.dv;   // [nk, D]
  std::fill(dk.begin(), dk.begin() + nk * d, 0.0f);  // rows [0, nk) are used
  std::fill(dv.begin(), dv.begin() + nk * d, 0.0f);
  load_keys_transposed(g, k, b, kv_head, j0, nk, t.kt.data());
  load_keys_transposed(g, v, b, kv_head, j0, nk, t.vt.data());
  // Queries below first_query see none of these keys; those outside the entry's range see no key at all.
  const int64_t first_query = std::max<int64_t>(std::max<int64_t>(0, j0 - g.offset), g.q_begin(b));
  const int64_t last_query = g.q_end(b);
  for (int64_t h = kv_head * g.group; h < (kv_head + 1) * g.group; ++h) {
    for (int64_t i0 = first_query; i0 < last_query; i0 += kBlockQ) {
      const int64_t nq = std::min(kBlockQ, last_query - i0);
      load_query_side(g, t, q, gout, lse, di, b, h, i0, nq);
      tile_product(g, t.qs.data(), t.kt.data(), nq, nk, t.s.data());     // s = (scale q) k^T
      tile_product(g, t.dout.data(), t.vt.data(), nq, nk, t.dp.data());  // dp = dO v^T
      probs_and_dscores(g, t, b, i0, j0, nq, nk);
      // P and dS read transposed in place: the scalar copies of both tiles were ~half of this function.
      mm_acc<true>(nk, d, nq, t.s.data(), kBlockK, t.dout.data(), d, dv.data(), d);  // dV += P^T dO
      mm_acc<true>(nk, d, nq, t.dp.data(), kBlockK, t.qs.data(), d, dk.data(), d);   // dK += dS^T (scale q)
      if (dq_sums) {  // dQ (before the scale) += dS k, as backward_query_block sums it
        float* rows = dq_sums + ((h - kv_head * g.group) * g.q_len + i0) * d;
        mm_acc(nq, d, nk, t.dp.data(), kBlockK, k + g.kv_offset(b, j0, kv_head), g.kv_row, rows, d);
      }
    }
  }
  for (int64_t c = 0; c < nk; ++c) {
    const int64_t dst = ((b * g.kv_len + j0 + c) * g.kv_heads + kv_head) * d;  // dense [B, Tk, Hkv, D]
    std::copy(dk.begin() + c * d, dk.begin() + (c + 1) * d, gk + dst);
    std::copy(dv.begin() + c * d, dv.begin() + (c + 1) * d, gv + dst);
  }
}

// dQ of queries [i0, i0 + nq) of one q head: scale * sum_j dS_ij k_j over visible keys in index order.
void backward_query_block(const Geometry& g, Tiles& t, const float* q, const float* k, const float* v,
                          const float* gout, const float* lse, const float* di, float* gq, int64_t b, int64_t h,
                          int64_t i0, int64_t nq) {
  const int64_t d = g.dim;
  const int64_t kv_head = h / g.group;
  load_query_side(g, t, q, gout, lse, di, b, h, i0, nq);
  std::fill(t.acc.begin(), t.acc.begin() + nq * d, 0.0f);
  const int64_t kend = g.key_end(i0 + nq);
  for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
    const int64_t nk = std::min(kBlockK, kend - j0);
    load_keys_transposed(g, k, b, kv_head, j0, nk, t.kt.data());
    load_keys_transposed(g, v, b, kv_head, j0, nk, t.vt.data());
    tile_product(g, t.qs.data(), t.kt.data(), nq, nk, t.s.data());     // s = (scale q) k^T
    tile_product(g, t.dout.data(), t.vt.data(), nq, nk, t.dp.data());  // dp = dO v^T
    probs_and_dscores(g, t, b, i0, j0, nq, nk);
    mm_acc(nq, d, nk, t.dp.data(), kBlockK, k + g.kv_offset(b, j0, kv_head), g.kv_row, t.acc.data(), d);
  }
  for (int64_t r = 0; r < nq; ++r) {
    float* dst = gq + g.q_offset(b, i0 + r, h);
    for (int64_t e = 0; e < d; ++e) dst[e] = g.scale * t.acc[r * d + e];
  }
}

// ---- exact decode: a few queries per row in the blocked kernel's order (BackendOptions::exact_decode) ----

// Rows [j0, j0 + n) of ROWS' values as at most two runs of consecutive rows (the shared prefix's, then the
// entry's own): f(first row, count, offset of the run in the block).
template <typename F>
void value_runs(const cpu_attention::KvRows& rows, int64_t j0, int64_t n, F&& f) {
  const int64_t split = std::clamp<int64_t>(rows.prefix_len - j0, 0, n);
  if (split > 0) f(rows.value(j0), split, int64_t{0});
  if (split < n) f(rows.value(j0 + split), n - split, split);
}

// Transposes a kLanes x kLanes block held as one vector per row, in registers: after it, v[e] holds column e.
// Each stage swaps the off-diagonal J x J blocks of every 2J x 2J block (J = kLanes / 2, ..., 1).
// clang-format off
inline void transpose_lanes(Lanes* v) {
  const auto stage = [&](int j, auto lo, auto hi) {
    for (int i = 0; i < kLanes; ++i)
      if ((i & j) == 0) {
        const Lanes a = v[i], b = v[i + j];
        v[i] = lo(a, b);
        v[i + j] = hi(a, b);
      }
  };
#if defined(__AVX512F__)
  stage(8, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31); });
  stage(4, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31); });
  stage(2, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31); });
  stage(1, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31); });
#else
  stage(4, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15); });
  stage(2, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15); });
  stage(1, [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 0, 8, 2, 10, 4, 12, 6, 14); },
           [](Lanes a, Lanes b) { return __builtin_shufflevector(a, b, 1, 9, 3, 11, 5, 13, 7, 15); });
#endif
}
// clang-format on

// Scores S [heads, kBlockK] (columns from key j0) of keys [j0, j0 + nk) for the q heads of kv head KVH, QS
// the scaled queries [heads, D]: tile_product's arithmetic, each score (scale q)[e] * k[e] added in index
// order from zero. Whole groups of kLanes keys take them side by side in lanes, their key rows transposed in
// registers a kLanes x kLanes piece at a time (one transpose serves the kv head's q heads); other keys, and
// head sizes of no whole vector, the same chain one key at a time.
void decode_scores(const Geometry& g, const cpu_attention::KvRows& rows, const float* qs, int64_t kvh,
                   int64_t j0, int64_t nk, float* s) {
  const int64_t d = g.dim, h0 = kvh * g.group, h1 = h0 + g.group;
  int64_t c = 0;
  if (d % kLanes == 0)
    for (; c + kLanes <= nk; c += kLanes)
      for (int64_t e0 = 0; e0 < d; e0 += kLanes) {
        Lanes col[kLanes];
        for (int r = 0; r < kLanes; ++r)
          std::memcpy(&col[r], rows.key(j0 + c + r) + kvh * d + e0, sizeof(Lanes));
        transpose_lanes(col);
        for (int64_t h = h0; h < h1; ++h) {
          Lanes acc = {};
          if (e0 > 0) std::memcpy(&acc, s + h * kBlockK + c, sizeof(Lanes));
          const float* qh = qs + h * d + e0;
          for (int e = 0; e < kLanes; ++e) acc += qh[e] * col[e];
          std::memcpy(s + h * kBlockK + c, &acc, sizeof(Lanes));
        }
      }
  for (; c < nk; ++c) {
    const float* key = rows.key(j0 + c) + kvh * d;
    for (int64_t h = h0; h < h1; ++h) {
      float acc = 0.0f;
      for (int64_t e = 0; e < d; ++e) acc += qs[h * d + e] * key[e];
      s[h * kBlockK + c] = acc;
    }
  }
}

// The decode step (q_len <= kDecodeMaxQueries, or any that reads a shared prefix or rows of the cache by
// index) with BackendOptions::exact_decode: one task per batch entry over all its heads, so that its key and
// value rows are read front to back once per query. Each query row takes forward_block's steps in
// forward_block's order (the same key tiles, tile_product's scores, softmax_step, mm_acc's value sums,
// finish_row), so its output is the one the training forward gives that row, bit for bit: the sampler's
// log-probs are the trainer's. It skips only tiles and keys the row cannot see, whose terms forward_block
// adds as zeros. The price is the transpose of every key row in decode_scores (the training chain runs along
// head_dim, where cpu_attention_decode.cpp's dot products run across it).
void exact_decode_forward(const Geometry& g, const AttentionArgs& a, const float* q, const float* k,
                          const float* v, float* out, float* lse) {
  const int64_t d = g.dim, heads = g.q_heads;
  parallel_for(g.batch, 1, [&](int64_t tb, int64_t te) {
    // Per-thread scratch, kept: every element read is written first for the current row.
    thread_local std::vector<float> qs, s, acc, m, l;
    qs.resize(static_cast<size_t>(heads * d));
    s.resize(static_cast<size_t>(heads * kBlockK));
    acc.resize(static_cast<size_t>(heads * d));
    m.resize(static_cast<size_t>(heads));
    l.resize(static_cast<size_t>(heads));
    for (int64_t b = tb; b < te; ++b) {
      const cpu_attention::KvRows rows(a, k, v, b);
      for (int64_t i = 0; i < g.q_len; ++i) {
        load_rows(q + g.q_offset(b, i, 0), d, heads, d, g.scale, qs.data());
        std::fill(acc.begin(), acc.end(), 0.0f);
        std::fill(m.begin(), m.end(), kNegInf);
        std::fill(l.begin(), l.end(), 0.0f);
        const int64_t kend = g.key_end(i + 1);
        for (int64_t j0 = 0; j0 < kend; j0 += kBlockK) {
          const int64_t nk = std::min(kBlockK, kend - j0), vis = g.visible_end(i, j0, nk);
          for (int64_t kvh = 0; kvh < g.kv_heads; ++kvh) {
            decode_scores(g, rows, qs.data(), kvh, j0, nk, s.data());
            for (int64_t h = kvh * g.group; h < (kvh + 1) * g.group; ++h) {
              float* sh = s.data() + h * kBlockK;
              if (g.mask != nullptr)
                for (int64_t c = 0; c < vis; ++c)
                  if (!g.visible(b, i, j0 + c)) sh[c] = kNegInf;
              softmax_step(sh, vis, nk, m[h], l[h], acc.data() + h * d, d);
              value_runs(rows, j0, nk, [&](const float* src, int64_t n, int64_t at) {
                mm_acc(1, d, n, sh + at, kBlockK, src + kvh * d, g.kv_row, acc.data() + h * d, d);
              });
            }
          }
        }
        for (int64_t h = 0; h < heads; ++h)
          finish_row(acc.data() + h * d, m[h], l[h], d, out + g.q_offset(b, i, h),
                     lse + g.lse_offset(b, h) + i);
      }
    }
  });
}
}  // namespace

void CpuBackend::attention_forward(const AttentionArgs& args, const float* q, const float* k, const float* v,
                                   float* out, float* lse) {
  GTPO_PRIMITIVE("attention_forward");
  const Geometry g(args);
  // The decode paths are right for any q_len; the blocked kernel is faster for many queries but reads keys
  // in tiles that cannot straddle a shared prefix, and reads no rows through kv_rows.
  if (args.q_len <= cpu_attention::kDecodeMaxQueries || args.prefix_len > 0 || args.kv_rows) {
    if (options_.exact_decode)
      exact_decode_forward(g, args, q, k, v, out, lse);
    else
      cpu_attention::decode_forward(args, q, k, v, out, lse);
    if (args.query_range) {  // computed in full (a few queries), then the idle ones cleared
      for (int64_t b = 0; b < g.batch; ++b)
        for (int64_t h = 0; h < g.q_heads; ++h) {
          idle_queries(g, out, lse, b, h, 0, g.q_begin(b));
          idle_queries(g, out, lse, b, h, g.q_end(b), g.q_len);
        }
    }
    return;
  }
  const int64_t q_blocks = (g.q_len + kBlockQ - 1) / kBlockQ;
  // Tasks: (batch, q head, query block); each owns its output rows and lse entries.
  parallel_for(g.batch * g.q_heads * q_blocks, 1, [&](int64_t tb, int64_t te) {
    Tiles& tiles = thread_tiles(g.dim);
    for (int64_t task = tb; task < te; ++task) {
      const int64_t bh = task / q_blocks, b = bh / g.q_heads, h = bh % g.q_heads;
      const int64_t i0 = interleaved_block(task % q_blocks, q_blocks) * kBlockQ;
      const int64_t i1 = std::min(g.q_len, i0 + kBlockQ);
      // A query's result depends only on its own row and keys, so computing the attending rows alone
      // gives them the same bits as computing the whole block.
      const auto [lo, hi] = g.attending(b, i0, i1 - i0);
      idle_queries(g, out, lse, b, h, i0, lo);
      idle_queries(g, out, lse, b, h, hi, i1);
      if (hi > lo) forward_block(g, tiles, q, k, v, out, lse, b, h, lo, hi - lo);
    }
  });
}

void CpuBackend::attention_backward(const AttentionArgs& args, const float* q, const float* k, const float* v,
                                    const float* out, const float* lse, const float* gout, float* gq, float* gk,
                                    float* gv) {
  GTPO_PRIMITIVE("attention_backward");
  const Geometry g(args);
  const int64_t d = g.dim;
  // D_i = dO_i . O_i for every (batch, q head, query), laid out like lse.
  std::vector<float> di(static_cast<size_t>(g.batch * g.q_heads * g.q_len));
  parallel_for(g.batch * g.q_len, grain_for(g.q_row), [&](int64_t rb, int64_t re) {
    for (int64_t row = rb; row < re; ++row) {
      const int64_t b = row / g.q_len, i = row % g.q_len;
      for (int64_t h = 0; h < g.q_heads; ++h) {
        const float* o = out + g.q_offset(b, i, h);
        const float* go = gout + g.q_offset(b, i, h);
        float acc = 0.0f;
        for (int64_t e = 0; e < d; ++e) acc += go[e] * o[e];
        di[static_cast<size_t>(g.lse_offset(b, h) + i)] = acc;
      }
    }
  });

  const int64_t k_blocks = (g.kv_len + kBlockK - 1) / kBlockK;
  const int64_t q_blocks = (g.q_len + kBlockQ - 1) / kBlockQ;
  // Fused: one task per (entry, kv head) walks its key blocks in index order and sums dQ of the group's
  // heads as it goes (backward_key_block's dq_sums), so that pass 2, which recomputes every score and dS
  // tile, is skipped (the larger TRL job's backward at 110 positions: 46 -> 34 ms a layer). The bits are
  // pass 2's, so the choice may follow the thread count: fused when there are tasks enough for every
  // thread (a few long sequences keep the two passes, whose tasks are per key block).
  if (g.batch * g.kv_heads >= 2 * static_cast<int64_t>(omp_get_max_threads())) {
    parallel_for(g.batch * g.kv_heads, 1, [&](int64_t tb, int64_t te) {
      Tiles& tiles = thread_tiles(d);
      thread_local std::vector<float> dq_sums;
      for (int64_t task = tb; task < te; ++task) {
        const int64_t b = task / g.kv_heads, kv_head = task % g.kv_heads;
        dq_sums.assign(static_cast<size_t>(g.group * g.q_len * d), 0.0f);
        for (int64_t j0 = 0; j0 < g.kv_len; j0 += kBlockK)
          backward_key_block(g, tiles, q, k, v, gout, lse, di.data(), gk, gv, dq_sums.data(), b, kv_head, j0,
                             std::min(kBlockK, g.kv_len - j0));
        for (int64_t c = 0; c < g.group; ++c)  // queries that see no key (or attend not at all) sum to zero
          for (int64_t i = 0; i < g.q_len; ++i) {
            float* dst = gq + g.q_offset(b, i, kv_head * g.group + c);
            const float* sums = dq_sums.data() + (c * g.q_len + i) * d;
            for (int64_t e = 0; e < d; ++e) dst[e] = g.scale * sums[e];
          }
      }
    });
    return;
  }
  parallel_for(g.batch * g.kv_heads * k_blocks, 1, [&](int64_t tb, int64_t te) {
    Tiles& tiles = thread_tiles(d);
    for (int64_t task = tb; task < te; ++task) {
      const int64_t bg = task / k_blocks;
      const int64_t j0 = interleaved_block(task % k_blocks, k_blocks) * kBlockK;
      backward_key_block(g, tiles, q, k, v, gout, lse, di.data(), gk, gv, nullptr, bg / g.kv_heads,
                         bg % g.kv_heads, j0, std::min(kBlockK, g.kv_len - j0));
    }
  });
  parallel_for(g.batch * g.q_heads * q_blocks, 1, [&](int64_t tb, int64_t te) {
    Tiles& tiles = thread_tiles(d);
    for (int64_t task = tb; task < te; ++task) {
      const int64_t bh = task / q_blocks, b = bh / g.q_heads, h = bh % g.q_heads;
      const int64_t i0 = interleaved_block(task % q_blocks, q_blocks) * kBlockQ;
      const int64_t i1 = std::min(g.q_len, i0 + kBlockQ);
      const auto [lo, hi] = g.attending(b, i0, i1 - i0);
      idle_query_grads(g, gq, b, h, i0, lo);
      idle_query_grads(g, gq, b, h, hi, i1);
      if (hi > lo) backward_query_block(g, tiles, q, k, v, gout, lse, di.data(), gq, b, h, lo, hi - lo);
    }
  });
}

}  // namespace gtpo
