// Forward kernels of CUDA attention and their launch plan: the tiled kernel (training, prefill) and the
// split-K decode kernel with its combine (a few queries over a long KV cache). Design: cuda_attention.cu.
#pragma once
#include "runtime/cuda/cuda_attention_tiles.cuh"

namespace gtpo::cuda::attn {

// ---- forward, tiled -------------------------------------------------------------------------------

// One tile of fwd_tiled_kernel's online softmax for the rows this thread owns: masks the scores s, updates
// the running max m and sum share l, writes the tile's probabilities to Ps and rescales acc.
template <int RM, int KN, int DN, int SP>
__device__ __forceinline__ void tile_softmax_update(const Geom& g, float (&s)[RM][KN], const float* kmask,
                                                    int64_t i0, int64_t j0, int tr, int tc, float* Ps,
                                                    float (&m)[RM], float (&l)[RM], float (&acc)[RM][DN]) {
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int r = tr + kRowGroups * i;
    const int64_t qi = i0 + r;
    float tmax = kNegInf;
#pragma unroll
    for (int j = 0; j < KN; ++j) {
      const int c = tc + kGroupLanes * j;
      if (!(query_ok(g, qi) && kmask[c] != 0.0f && causal_ok(g, qi, j0 + c))) s[i][j] = kNegInf;
      tmax = fmaxf(tmax, s[i][j]);
    }
    tmax = group_max(tmax);
    // A tile with nothing visible in this row leaves its state untouched (alpha 1, p 0), so the row's result
    // does not depend on which other rows share its block.
    const float m_new = fmaxf(m[i], tmax);
    const float alpha = tmax == kNegInf ? 1.0f : expf(m[i] - m_new);  // 0 on the row's first visible tile
    float psum = 0.0f;
#pragma unroll
    for (int j = 0; j < KN; ++j) {
      const float p = s[i][j] == kNegInf ? 0.0f : expf(s[i][j] - m_new);
      Ps[r * SP + tc + kGroupLanes * j] = p;
      psum += p;
    }
    l[i] = fmaf(l[i], alpha, psum);
    m[i] = m_new;
#pragma unroll
    for (int e = 0; e < DN; ++e) acc[i][e] *= alpha;
  }
}

// fwd_tiled_kernel's outputs for the rows this thread owns: acc / l (0 for a row that saw no key) and lse.
template <int RM, int DN>
__device__ __forceinline__ void write_tiled_rows(const Geom& g, const float (&acc)[RM][DN],
                                                 const float (&m)[RM], const float (&l)[RM], int64_t i0,
                                                 int64_t b, int64_t h, int tr, int tc, int dim, float* out,
                                                 float* lse) {
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const float lsum = group_sum(l[i]);  // > 0 iff the row saw a key (its max key contributes exp(0) = 1)
    const int64_t qi = i0 + tr + kRowGroups * i;
    if (query_ok(g, qi)) {
      float* o = out + q_offset(g, b, qi, h);
#pragma unroll
      for (int e = 0; e < DN; ++e) {
        const int d = tc + kGroupLanes * e;
        if (d < dim) o[d] = lsum > 0.0f ? acc[i][e] / lsum : 0.0f;
      }
      if (tc == 0) lse[stat_index(g, b, h, qi)] = lsum > 0.0f ? m[i] + logf(lsum) : kNegInf;
    }
  }
}

template <int kMaxD, bool kExact, int BQ, int BK>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fwd_tiled_kernel(Geom g, const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                     float* __restrict__ out, float* __restrict__ lse) {
  constexpr int SD = kMaxD + 1, SP = BK + 8;
  constexpr int RM = BQ / kRowGroups, KN = BK / kGroupLanes, DN = kMaxD / kGroupLanes;
  static_assert(BQ % kRowGroups == 0 && BK % kGroupLanes == 0 && kMaxD % kGroupLanes == 0, "tile shape");
  const int dim = kExact ? kMaxD : static_cast<int>(g.dim);
  float* Qs = dynamic_smem();   // [BQ][SD] queries, pre-scaled
  float* Ks = Qs + BQ * SD;     // [BK][SD]
  float* Vs = Ks + BK * SD;     // [BK][SD]
  float* Ps = Vs + BK * SD;     // [BQ][SP] probabilities of the current tile
  float* kmask = Ps + BQ * SP;  // [BK]

  const int tid = threadIdx.x, tr = tid / kGroupLanes, tc = tid % kGroupLanes;
  const int64_t q_blocks = ceil_div(g.q_len, BQ);
  const int64_t bh = blockIdx.x / q_blocks;
  const int64_t i0 = (q_blocks - 1 - blockIdx.x % q_blocks) * BQ;  // causal: the longest blocks start first
  const int64_t b = bh / g.q_heads, h = bh % g.q_heads, kvh = kv_head_of(g, h);
  const int nq = static_cast<int>(min64(BQ, g.q_len - i0));

  load_rows<kMaxD, BQ>(Qs, q + q_offset(g, b, i0, h), g.q_row, nq, dim, g.scale);

  // Per owned row: running max m, this thread's share of the running sum l (its keys only; the row's 8 shares
  // are added once at the end, which is valid because every rescale factor is common to the row), accumulator.
  float acc[RM][DN], m[RM], l[RM];
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    m[i] = kNegInf;
    l[i] = 0.0f;
#pragma unroll
    for (int e = 0; e < DN; ++e) acc[i][e] = 0.0f;
  }

  const int64_t kend = key_end(g, i0 + nq);
  for (int64_t j0 = 0; j0 < kend; j0 += BK) {
    const int nk = static_cast<int>(min64(BK, kend - j0));
    __syncthreads();  // the previous tile's readers of Ks, Vs, kmask are done
    load_rows<kMaxD, BK>(Ks, k + kv_offset(g, b, j0, kvh), g.kv_row, nk, dim, 1.0f);
    load_rows<kMaxD, BK>(Vs, v + kv_offset(g, b, j0, kvh), g.kv_row, nk, dim, 1.0f);
    load_key_mask<BK>(kmask, g, b, j0, nk);
    __syncthreads();  // (the first pass also publishes Qs)

    float s[RM][KN];
    tile_dots<kMaxD, kExact, RM, KN>(Qs, Ks, dim, tr, tc, s);
    tile_softmax_update<RM, KN, DN, SP>(g, s, kmask, i0, j0, tr, tc, Ps, m, l, acc);
    __syncwarp();  // rows of Ps are written and read by the same warp

    // acc += P V over the tile's keys in order (rows beyond nk of Vs are zero and P is 0 there anyway).
#pragma unroll 2
    for (int c = 0; c < nk; ++c) {
      float p[RM], vv[DN];
#pragma unroll
      for (int i = 0; i < RM; ++i) p[i] = Ps[(tr + kRowGroups * i) * SP + c];
#pragma unroll
      for (int e = 0; e < DN; ++e) vv[e] = Vs[c * SD + tc + kGroupLanes * e];
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int e = 0; e < DN; ++e) acc[i][e] = fmaf(p[i], vv[e], acc[i][e]);
    }
  }

  write_tiled_rows<RM, DN>(g, acc, m, l, i0, b, h, tr, tc, dim, out, lse);
}

// ---- forward, decode (few queries, possibly long kv) ------------------------------------------------

// fwd_decode_kernel's end: its 4 warps' (m, l, acc) merged in warp order, M = max m_w with weights
// exp(m_w - M) (0 for an empty warp), written as the row's output and lse (one split) or as this split's
// partial [m, l, acc[dim]].
template <int kMaxD>
__device__ __forceinline__ void merge_decode_warps(const Geom& g, int64_t splits, float m, float l,
                                                   const float (&acc)[kMaxD / kWarpLanes], int64_t row,
                                                   int64_t split, int64_t b, int64_t h, int64_t qi, int dim,
                                                   float* out, float* lse, float* part) {
  constexpr int E = kMaxD / kWarpLanes, SW = kMaxD + 2;  // SW: per-warp slot in shared memory: m, l, acc
  const int tid = threadIdx.x, warp = tid / kWarpLanes, lane = tid % kWarpLanes;
  float* slots = dynamic_smem();  // [kWarpsPerBlock][SW]
  float* mine = slots + warp * SW;
  if (lane == 0) {
    mine[0] = m;
    mine[1] = l;
  }
#pragma unroll
  for (int e = 0; e < E; ++e) mine[2 + lane + kWarpLanes * e] = acc[e];
  __syncthreads();
  float big_m = kNegInf;
#pragma unroll
  for (int w = 0; w < kWarpsPerBlock; ++w) big_m = fmaxf(big_m, slots[w * SW]);
  float wgt[kWarpsPerBlock];
  float big_l = 0.0f;
#pragma unroll
  for (int w = 0; w < kWarpsPerBlock; ++w) {
    const float mw = slots[w * SW];
    wgt[w] = mw == kNegInf ? 0.0f : expf(mw - big_m);
    big_l = fmaf(slots[w * SW + 1], wgt[w], big_l);
  }
  if (splits == 1) {
    float* o = out + q_offset(g, b, qi, h);
    for (int d = tid; d < dim; d += kThreads) {
      float a = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarpsPerBlock; ++w) a = fmaf(slots[w * SW + 2 + d], wgt[w], a);
      o[d] = big_l > 0.0f ? a / big_l : 0.0f;
    }
    if (tid == 0) lse[row] = big_l > 0.0f ? big_m + logf(big_l) : kNegInf;
  } else {
    float* dst = part + (row * splits + split) * (g.dim + 2);  // [m, l, acc[dim]]
    for (int d = tid; d < dim; d += kThreads) {
      float a = 0.0f;
#pragma unroll
      for (int w = 0; w < kWarpsPerBlock; ++w) a = fmaf(slots[w * SW + 2 + d], wgt[w], a);
      dst[2 + d] = a;
    }
    if (tid == 0) {
      dst[0] = big_m;
      dst[1] = big_l;
    }
  }
}

// Block (row, split): row = (b * q_heads + h) * q_len + i, which is also its lse index. The split's keys
// [split * 512, ...) are cut into 4 contiguous chunks, one per warp; a warp scores kDecodeUnroll keys at a time
// (lanes over head_dim, then a butterfly sum), updates its online softmax, and the block merges its 4 warps in
// warp order. K/V rows are read whole by a warp: coalesced, and each row read once per query.
template <int kMaxD, bool kExact>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    fwd_decode_kernel(Geom g, int64_t splits, const float* __restrict__ q, const float* __restrict__ k,
                      const float* __restrict__ v, float* __restrict__ out, float* __restrict__ lse,
                      float* __restrict__ part) {
  constexpr int E = kMaxD / kWarpLanes;  // head-dim elements per lane: d = lane + 32 e
  static_assert(kMaxD % kWarpLanes == 0, "decode head-dim bucket");
  const int dim = kExact ? kMaxD : static_cast<int>(g.dim);
  const int tid = threadIdx.x, warp = tid / kWarpLanes, lane = tid % kWarpLanes;
  const int64_t row = blockIdx.x / splits, split = blockIdx.x % splits;
  const int64_t qi = row % g.q_len, bh = row / g.q_len;
  const int64_t b = bh / g.q_heads, h = bh % g.q_heads, kvh = kv_head_of(g, h);

  const int64_t s_begin = split * kDecodeSplitKeys;
  const int64_t s_end = min64(s_begin + kDecodeSplitKeys, g.kv_len);
  const int64_t chunk = ceil_div(s_end - s_begin, kWarpsPerBlock);
  const int64_t j_begin = s_begin + warp * chunk;
  // Keys at or past key_end(qi + 1) are causally hidden from this row.
  const int64_t j_end = min64(min64(j_begin + chunk, s_end), key_end(g, qi + 1));
  constexpr int kDecodeUnroll = decode_unroll<kMaxD>();

  const float* qrow = q + q_offset(g, b, qi, h);
  float qv[E], acc[E];
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int d = lane + kWarpLanes * e;
    qv[e] = (kExact || d < dim) ? g.scale * qrow[d] : 0.0f;
    acc[e] = 0.0f;
  }
  float m = kNegInf, l = 0.0f;  // identical in every lane of the warp

  for (int64_t j = j_begin; j < j_end; j += kDecodeUnroll) {
    float s[kDecodeUnroll];
    bool vis[kDecodeUnroll];
#pragma unroll
    for (int t = 0; t < kDecodeUnroll; ++t) {
      vis[t] = j + t < j_end && key_ok(g, b, j + t);  // warp-uniform
      float dot = 0.0f;
      if (vis[t]) {
        const float* kr = kv_row_ptr(g, k, g.prefix_k, b, j + t, kvh);
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const int d = lane + kWarpLanes * e;
          if (kExact || d < dim) dot = fmaf(qv[e], kr[d], dot);
        }
      }
      s[t] = lanes_sum(dot);  // every lane, outside the branch
      if (!vis[t]) s[t] = kNegInf;
    }
    float tmax = kNegInf;
#pragma unroll
    for (int t = 0; t < kDecodeUnroll; ++t) tmax = fmaxf(tmax, s[t]);
    if (tmax == kNegInf) continue;  // warp-uniform: nothing visible among these keys
    const float m_new = fmaxf(m, tmax);
    const float alpha = expf(m - m_new);
    float p[kDecodeUnroll];
    l *= alpha;
#pragma unroll
    for (int t = 0; t < kDecodeUnroll; ++t) {
      p[t] = vis[t] ? expf(s[t] - m_new) : 0.0f;
      l += p[t];
    }
    m = m_new;
#pragma unroll
    for (int e = 0; e < E; ++e) {
      const int d = lane + kWarpLanes * e;
      float a = acc[e] * alpha;
#pragma unroll
      for (int t = 0; t < kDecodeUnroll; ++t)
        if (vis[t] && (kExact || d < dim)) a = fmaf(p[t], kv_row_ptr(g, v, g.prefix_v, b, j + t, kvh)[d], a);
      acc[e] = a;
    }
  }

  merge_decode_warps<kMaxD>(g, splits, m, l, acc, row, split, b, h, qi, dim, out, lse, part);
}

// One warp per query row merges the row's split partials in split order (same rule as the warp merge above).
// (static: the non-template kernels of this header must not clash if a second file ever includes it.)
static __global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    decode_combine_kernel(Geom g, int64_t splits, const float* __restrict__ part, float* __restrict__ out,
                          float* __restrict__ lse) {
  const int warp = threadIdx.x / kWarpLanes, lane = threadIdx.x % kWarpLanes;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
  if (row >= g.batch * g.q_heads * g.q_len) return;  // whole warps; this kernel has no block barrier
  const int64_t stride = g.dim + 2;
  const float* pr = part + row * splits * stride;
  float big_m = kNegInf;
  for (int64_t s = 0; s < splits; ++s) big_m = fmaxf(big_m, pr[s * stride]);
  float big_l = 0.0f;
  for (int64_t s = 0; s < splits; ++s) {
    const float ms = pr[s * stride];
    big_l = fmaf(pr[s * stride + 1], ms == kNegInf ? 0.0f : expf(ms - big_m), big_l);
  }
  const int64_t qi = row % g.q_len, bh = row / g.q_len;
  float* o = out + q_offset(g, bh / g.q_heads, qi, bh % g.q_heads);
  for (int64_t d = lane; d < g.dim; d += kWarpLanes) {
    float a = 0.0f;
    for (int64_t s = 0; s < splits; ++s) {
      const float ms = pr[s * stride];
      a = fmaf(pr[s * stride + 2 + d], ms == kNegInf ? 0.0f : expf(ms - big_m), a);
    }
    o[d] = big_l > 0.0f ? a / big_l : 0.0f;
  }
  if (lane == 0) lse[row] = big_l > 0.0f ? big_m + logf(big_l) : kNegInf;
}

// ---- launch plan ----------------------------------------------------------------------------------------
template <int kMaxD, bool kExact, class Exec>
void forward_for_dim(Exec& ex, const Geom& g, const float* q, const float* k, const float* v, float* out,
                     float* lse) {
  if (g.q_len <= kDecodeMaxQueries || g.prefix_len > 0 || g.kv_rows) {
    // Few queries: a tiled block would leave most of its rows empty and the grid would have only
    // batch * q_heads blocks, so rows are spread over kv splits instead. The decode kernel is right for
    // any q_len, and it alone reads a shared prefix or cache rows by index (the tiled kernel stages key
    // tiles from one buffer).
    const int64_t rows = g.batch * g.q_heads * g.q_len;
    const int64_t splits = decode_splits(g.kv_len);
    float* part = nullptr;
    if (splits > 1) part = static_cast<float*>(ex.scratch(sizeof(float) * size_t(rows * splits * (g.dim + 2))));
    ex.launch(fwd_decode_kernel<kMaxD, kExact>, rows * splits, sizeof(float) * decode_smem_floats<kMaxD>(), g,
              splits, q, k, v, out, lse, part);
    if (splits > 1)
      ex.launch(decode_combine_kernel, ceil_div(rows, kWarpsPerBlock), 0, g, splits,
                static_cast<const float*>(part), out, lse);
    return;
  }
  constexpr int BQ = Tiles<kMaxD>::fq, BK = Tiles<kMaxD>::fk;
  ex.launch(fwd_tiled_kernel<kMaxD, kExact, BQ, BK>, g.batch * g.q_heads * ceil_div(g.q_len, BQ),
            sizeof(float) * fwd_smem_floats<kMaxD, BQ, BK>(), g, q, k, v, out, lse);
}

template <class Exec>
void forward_plan(Exec& ex, const Geom& g, const float* q, const float* k, const float* v, float* out, float* lse) {
  if (g.batch * g.q_heads * g.q_len == 0) return;  // nothing to write
  with_head_dim(g.dim, [&](auto hd) {
    using H = decltype(hd);
    forward_for_dim<H::kMaxD, H::kExact>(ex, g, q, k, v, out, lse);
  });
}

}  // namespace gtpo::cuda::attn
