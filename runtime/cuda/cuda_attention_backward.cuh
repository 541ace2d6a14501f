// Backward kernels of CUDA attention and their launch plan: D_i = gout_i . out_i, then dK/dV per key block and
// dQ per query block, each recomputing P from the saved lse. Design: cuda_attention.cu.
#pragma once
#include "runtime/cuda/cuda_attention_tiles.cuh"

namespace gtpo::cuda::attn {

// ---- backward ------------------------------------------------------------------------------------

// di[b, h, i] = sum_d gout[b, i, h, d] * out[b, i, h, d]; one warp per row of the [B, Tq, Hq] layout.
static __global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    bwd_dot_kernel(Geom g, const float* __restrict__ out, const float* __restrict__ gout, float* __restrict__ di) {
  const int warp = threadIdx.x / kWarpLanes, lane = threadIdx.x % kWarpLanes;
  const int64_t row = int64_t(blockIdx.x) * kWarpsPerBlock + warp;
  if (row >= g.batch * g.q_len * g.q_heads) return;  // whole warps; no block barrier
  const float* o = out + row * g.dim;
  const float* go = gout + row * g.dim;
  float acc = 0.0f;
  for (int64_t d = lane; d < g.dim; d += kWarpLanes) acc = fmaf(go[d], o[d], acc);
  acc = lanes_sum(acc);
  const int64_t h = row % g.q_heads, bi = row / g.q_heads;
  if (lane == 0) di[stat_index(g, bi / g.q_len, h, bi % g.q_len)] = acc;
}

// Turns the recomputed score tile s = (scale q) k^T and dp = gout v^T into P = exp(s - lse) (0 where hidden or
// where the row saw nothing) and dS = P (dp - D_i), stored at rows tr + 16 i, keys tc + 8 j.
template <int RM, int KN, int SP>
__device__ __forceinline__ void probs_and_dscores(const Geom& g, int64_t i0, int64_t j0, int tr, int tc,
                                                  const float* lse_s, const float* di_s, const float* kmask,
                                                  const float (&s)[RM][KN], const float (&dp)[RM][KN], float* Ps,
                                                  float* dSs) {
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int r = tr + kRowGroups * i;
    const int64_t qi = i0 + r;
    const float row_lse = lse_s[r], row_di = di_s[r];
#pragma unroll
    for (int j = 0; j < KN; ++j) {
      const int c = tc + kGroupLanes * j;
      const bool vis = query_ok(g, qi) && kmask[c] != 0.0f && causal_ok(g, qi, j0 + c) && row_lse != kNegInf;
      const float p = vis ? expf(s[i][j] - row_lse) : 0.0f;
      if (Ps != nullptr) Ps[r * SP + c] = p;
      dSs[r * SP + c] = p * (dp[i][j] - row_di);
    }
  }
}

// Loads the query side of a backward tile: pre-scaled q, gout, lse and D_i of queries [i0, i0 + nq).
template <int kMaxD, int BQ>
__device__ __forceinline__ void load_query_side(const Geom& g, const float* __restrict__ q,
                                                const float* __restrict__ gout, const float* __restrict__ lse,
                                                const float* __restrict__ di, int64_t b, int64_t h, int64_t i0,
                                                int nq, int dim, float* Qs, float* dOs, float* lse_s, float* di_s) {
  load_rows<kMaxD, BQ>(Qs, q + q_offset(g, b, i0, h), g.q_row, nq, dim, g.scale);
  load_rows<kMaxD, BQ>(dOs, gout + q_offset(g, b, i0, h), g.q_row, nq, dim, 1.0f);
  for (int r = threadIdx.x; r < BQ; r += kThreads) {
    lse_s[r] = r < nq ? lse[stat_index(g, b, h, i0 + r)] : kNegInf;
    di_s[r] = r < nq ? di[stat_index(g, b, h, i0 + r)] : 0.0f;
  }
}

// Writes a thread's dK, dV elements (keys tk + 16 i, dims td + 8 e) of keys [j0, j0 + nk). Keys no query sees
// (or q_len == 0) get their zeros here too: gk, gv come uninitialised.
template <int KI, int DN>
__device__ __forceinline__ void store_kv_grads(const Geom& g, int64_t b, int64_t kvh, int64_t j0, int nk,
                                               int dim, int tk, int td, const float (&dk)[KI][DN],
                                               const float (&dv)[KI][DN], float* __restrict__ gk,
                                               float* __restrict__ gv) {
#pragma unroll
  for (int i = 0; i < KI; ++i) {
    const int c = tk + kRowGroups * i;
    if (c >= nk) continue;
    const int64_t base = kv_grad_offset(g, b, j0 + c, kvh);
#pragma unroll
    for (int e = 0; e < DN; ++e) {
      const int d = td + kGroupLanes * e;
      if (d < dim) {
        gk[base + d] = dk[i][e];
        gv[base + d] = dv[i][e];
      }
    }
  }
}

// dK, dV of keys [j0, j0 + BK) of one kv head. Queries are visited group head by group head (outer), then in
// query blocks in index order, starting at the first query that can see j0; each thread accumulates its own
// (key, dim) elements in that fixed order.
template <int kMaxD, bool kExact, int BQ, int BK>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    bwd_kv_kernel(Geom g, const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                  const float* __restrict__ gout, const float* __restrict__ lse, const float* __restrict__ di,
                  float* __restrict__ gk, float* __restrict__ gv) {
  constexpr int SD = kMaxD + 1, SP = BK + 8;
  constexpr int RM = BQ / kRowGroups, KN = BK / kGroupLanes;  // score tile: rows tr + 16 i, keys tc + 8 j
  constexpr int KI = BK / kRowGroups, DN = kMaxD / kGroupLanes;  // dK, dV: keys tk + 16 i, dims td + 8 e
  static_assert(BQ % kRowGroups == 0 && BK % kRowGroups == 0 && kMaxD % kGroupLanes == 0, "tile shape");
  const int dim = kExact ? kMaxD : static_cast<int>(g.dim);
  float* Ks = dynamic_smem();   // [BK][SD]
  float* Vs = Ks + BK * SD;     // [BK][SD]
  float* Qs = Vs + BK * SD;     // [BQ][SD] pre-scaled
  float* dOs = Qs + BQ * SD;    // [BQ][SD]
  float* Ps = dOs + BQ * SD;    // [BQ][SP]
  float* dSs = Ps + BQ * SP;    // [BQ][SP]
  float* lse_s = dSs + BQ * SP; // [BQ]
  float* di_s = lse_s + BQ;     // [BQ]
  float* kmask = di_s + BQ;     // [BK]

  const int tid = threadIdx.x, tr = tid / kGroupLanes, tc = tid % kGroupLanes;
  const int tk = tr, td = tc;
  const int64_t k_blocks = ceil_div(g.kv_len, BK);
  const int64_t bg = blockIdx.x / k_blocks;
  const int64_t j0 = (blockIdx.x % k_blocks) * BK;  // causal: low key blocks (most queries) start first
  const int64_t b = bg / g.kv_heads, kvh = bg % g.kv_heads;
  const int nk = static_cast<int>(min64(BK, g.kv_len - j0));

  load_rows<kMaxD, BK>(Ks, k + kv_offset(g, b, j0, kvh), g.kv_row, nk, dim, 1.0f);
  load_rows<kMaxD, BK>(Vs, v + kv_offset(g, b, j0, kvh), g.kv_row, nk, dim, 1.0f);
  load_key_mask<BK>(kmask, g, b, j0, nk);

  float dk[KI][DN], dv[KI][DN];
#pragma unroll
  for (int i = 0; i < KI; ++i)
#pragma unroll
    for (int e = 0; e < DN; ++e) dk[i][e] = dv[i][e] = 0.0f;

  const int64_t q_first = first_query(g, j0);
  for (int64_t hh = 0; hh < g.group; ++hh) {
    const int64_t h = kvh * g.group + hh;
    for (int64_t i0 = q_first; i0 < g.q_len; i0 += BQ) {
      const int nq = static_cast<int>(min64(BQ, g.q_len - i0));
      __syncthreads();  // the previous block's readers are done (the first pass publishes Ks, Vs, kmask)
      load_query_side<kMaxD, BQ>(g, q, gout, lse, di, b, h, i0, nq, dim, Qs, dOs, lse_s, di_s);
      __syncthreads();
      {
        float s[RM][KN], dp[RM][KN];
        tile_dots<kMaxD, kExact, RM, KN>(Qs, Ks, dim, tr, tc, s);
        tile_dots<kMaxD, kExact, RM, KN>(dOs, Vs, dim, tr, tc, dp);
        probs_and_dscores<RM, KN, SP>(g, i0, j0, tr, tc, lse_s, di_s, kmask, s, dp, Ps, dSs);
      }
      __syncthreads();  // every row of P and dS is read by every thread below
      // dV += P^T gout, dK += dS^T (scale q), over the block's queries in index order.
#pragma unroll 2
      for (int r = 0; r < nq; ++r) {
        float p[KI], ds[KI], go[DN], qs[DN];
#pragma unroll
        for (int i = 0; i < KI; ++i) {
          p[i] = Ps[r * SP + tk + kRowGroups * i];
          ds[i] = dSs[r * SP + tk + kRowGroups * i];
        }
#pragma unroll
        for (int e = 0; e < DN; ++e) {
          go[e] = dOs[r * SD + td + kGroupLanes * e];
          qs[e] = Qs[r * SD + td + kGroupLanes * e];
        }
#pragma unroll
        for (int i = 0; i < KI; ++i)
#pragma unroll
          for (int e = 0; e < DN; ++e) {
            dv[i][e] = fmaf(p[i], go[e], dv[i][e]);
            dk[i][e] = fmaf(ds[i], qs[e], dk[i][e]);
          }
      }
    }
  }
  store_kv_grads<KI, DN>(g, b, kvh, j0, nk, dim, tk, td, dk, dv, gk, gv);
}

// dQ of queries [i0, i0 + BQ) of one q head: scale * sum over visible keys, in index order, of dS_ij k_j.
template <int kMaxD, bool kExact, int BQ, int BK>
__global__ void __launch_bounds__(kThreads, kMinBlocksPerSm)
    bwd_q_kernel(Geom g, const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
                 const float* __restrict__ gout, const float* __restrict__ lse, const float* __restrict__ di,
                 float* __restrict__ gq) {
  constexpr int SD = kMaxD + 1, SP = BK + 8;
  constexpr int RM = BQ / kRowGroups, KN = BK / kGroupLanes, DN = kMaxD / kGroupLanes;
  static_assert(BQ % kRowGroups == 0 && BK % kGroupLanes == 0 && kMaxD % kGroupLanes == 0, "tile shape");
  const int dim = kExact ? kMaxD : static_cast<int>(g.dim);
  float* Qs = dynamic_smem();   // [BQ][SD] pre-scaled
  float* dOs = Qs + BQ * SD;    // [BQ][SD]
  float* Ks = dOs + BQ * SD;    // [BK][SD]
  float* Vs = Ks + BK * SD;     // [BK][SD]
  float* dSs = Vs + BK * SD;    // [BQ][SP]
  float* lse_s = dSs + BQ * SP; // [BQ]
  float* di_s = lse_s + BQ;     // [BQ]
  float* kmask = di_s + BQ;     // [BK]

  const int tid = threadIdx.x, tr = tid / kGroupLanes, tc = tid % kGroupLanes;
  const int64_t q_blocks = ceil_div(g.q_len, BQ);
  const int64_t bh = blockIdx.x / q_blocks;
  const int64_t i0 = (q_blocks - 1 - blockIdx.x % q_blocks) * BQ;  // the longest blocks start first
  const int64_t b = bh / g.q_heads, h = bh % g.q_heads, kvh = kv_head_of(g, h);
  const int nq = static_cast<int>(min64(BQ, g.q_len - i0));

  load_query_side<kMaxD, BQ>(g, q, gout, lse, di, b, h, i0, nq, dim, Qs, dOs, lse_s, di_s);

  float dq[RM][DN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int e = 0; e < DN; ++e) dq[i][e] = 0.0f;

  const int64_t kend = key_end(g, i0 + nq);
  for (int64_t j0 = 0; j0 < kend; j0 += BK) {
    const int nk = static_cast<int>(min64(BK, kend - j0));
    __syncthreads();  // the previous tile's readers are done (the first pass publishes the query side)
    load_rows<kMaxD, BK>(Ks, k + kv_offset(g, b, j0, kvh), g.kv_row, nk, dim, 1.0f);
    load_rows<kMaxD, BK>(Vs, v + kv_offset(g, b, j0, kvh), g.kv_row, nk, dim, 1.0f);
    load_key_mask<BK>(kmask, g, b, j0, nk);
    __syncthreads();
    {
      float s[RM][KN], dp[RM][KN];
      tile_dots<kMaxD, kExact, RM, KN>(Qs, Ks, dim, tr, tc, s);
      tile_dots<kMaxD, kExact, RM, KN>(dOs, Vs, dim, tr, tc, dp);
      probs_and_dscores<RM, KN, SP>(g, i0, j0, tr, tc, lse_s, di_s, kmask, s, dp, nullptr, dSs);
    }
    __syncwarp();  // rows of dSs are written and read by the same warp
#pragma unroll 2
    for (int c = 0; c < nk; ++c) {
      float ds[RM], kv[DN];
#pragma unroll
      for (int i = 0; i < RM; ++i) ds[i] = dSs[(tr + kRowGroups * i) * SP + c];
#pragma unroll
      for (int e = 0; e < DN; ++e) kv[e] = Ks[c * SD + tc + kGroupLanes * e];
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int e = 0; e < DN; ++e) dq[i][e] = fmaf(ds[i], kv[e], dq[i][e]);
    }
  }

#pragma unroll
  for (int i = 0; i < RM; ++i) {
    const int64_t qi = i0 + tr + kRowGroups * i;
    if (!query_ok(g, qi)) continue;
    float* dst = gq + q_offset(g, b, qi, h);
#pragma unroll
    for (int e = 0; e < DN; ++e) {
      const int d = tc + kGroupLanes * e;
      if (d < dim) dst[d] = g.scale * dq[i][e];
    }
  }
}

// ---- launch plan ----------------------------------------------------------------------------------------
template <int kMaxD, bool kExact, class Exec>
void backward_for_dim(Exec& ex, const Geom& g, const float* q, const float* k, const float* v, const float* out,
                      const float* lse, const float* gout, float* gq, float* gk, float* gv) {
  constexpr int BQ = Tiles<kMaxD>::bq, BK = Tiles<kMaxD>::bk;
  const int64_t q_rows = g.batch * g.q_len * g.q_heads;
  float* di = nullptr;  // [B, Hq, Tq], like lse
  if (q_rows > 0) {
    di = static_cast<float*>(ex.scratch(sizeof(float) * size_t(q_rows)));
    ex.launch(bwd_dot_kernel, ceil_div(q_rows, kWarpsPerBlock), 0, g, out, gout, di);
  }
  ex.launch(bwd_kv_kernel<kMaxD, kExact, BQ, BK>, g.batch * g.kv_heads * ceil_div(g.kv_len, BK),
            sizeof(float) * bwd_kv_smem_floats<kMaxD, BQ, BK>(), g, q, k, v, gout, lse,
            static_cast<const float*>(di), gk, gv);
  ex.launch(bwd_q_kernel<kMaxD, kExact, BQ, BK>, g.batch * g.q_heads * ceil_div(g.q_len, BQ),
            sizeof(float) * bwd_q_smem_floats<kMaxD, BQ, BK>(), g, q, k, v, gout, lse,
            static_cast<const float*>(di), gq);
}

template <class Exec>
void backward_plan(Exec& ex, const Geom& g, const float* q, const float* k, const float* v, const float* out,
                   const float* lse, const float* gout, float* gq, float* gk, float* gv) {
  with_head_dim(g.dim, [&](auto hd) {
    using H = decltype(hd);
    backward_for_dim<H::kMaxD, H::kExact>(ex, g, q, k, v, out, lse, gout, gq, gk, gv);
  });
}

}  // namespace gtpo::cuda::attn
