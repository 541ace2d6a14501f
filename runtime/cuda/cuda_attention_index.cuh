// Index and visibility rules of fused attention (AttentionArgs in runtime/backend.h), shared by every CUDA
// attention kernel. They are plain inline functions callable from host and device, so that they can be
// checked on a machine without a GPU against runtime/cpu/cpu_attention.cpp's Geometry, which states the same
// rules.
#pragma once
#include <cstdint>

#include "runtime/backend.h"

#if defined(__CUDACC__)
#define GTPO_ATTN_HD __host__ __device__ __forceinline__
#else
#define GTPO_ATTN_HD inline
#endif

namespace gtpo::cuda::attn {

// The problem, passed by value to every kernel. Element strides are int64 so that no offset overflows.
struct Geom {
  int64_t batch = 0, q_len = 0, kv_len = 0, q_heads = 0, kv_heads = 0, dim = 0;
  int64_t group = 1;     // q heads per kv head: q head h reads kv head h / group
  int64_t offset = 0;    // kv_len - q_len: query i sits at key position i + offset
  int64_t q_row = 0;     // elements between positions of q, out, gout, gq: q_heads * dim
  int64_t kv_row = 0;    // elements between positions of k, v, gk, gv: kv_heads * dim
  int64_t kv_batch = 0;  // elements between batch entries of k and v (kv_batch_stride, or dense)
  float scale = 1.0f;
  const int32_t* mask = nullptr;  // [batch, kv_len] or null
  // Shared prefix (AttentionArgs::prefix_*): keys j < prefix_len of entry b come from prefix entry
  // b / prefix_group. Forward decode path only.
  const float* prefix_k = nullptr;
  const float* prefix_v = nullptr;
  int64_t prefix_len = 0, prefix_group = 1, prefix_batch = 0;
  // AttentionArgs::kv_rows: entry b reads cache entry kv_rows[b] (and its prefix entry). Decode path only.
  const int32_t* kv_rows = nullptr;
};

inline Geom make_geom(const AttentionArgs& a) {
  Geom g;
  g.batch = a.batch;
  g.q_len = a.q_len;
  g.kv_len = a.kv_len;
  g.q_heads = a.q_heads;
  g.kv_heads = a.kv_heads;
  g.dim = a.head_dim;
  g.group = a.kv_heads > 0 ? a.q_heads / a.kv_heads : 1;
  g.offset = a.kv_len - a.q_len;
  g.q_row = a.q_heads * a.head_dim;
  g.kv_row = a.kv_heads * a.head_dim;
  g.kv_batch = a.kv_batch_stride > 0 ? a.kv_batch_stride : a.kv_len * a.kv_heads * a.head_dim;
  g.scale = a.scale;
  g.mask = a.key_mask;
  g.prefix_k = a.prefix_k;
  g.prefix_v = a.prefix_v;
  g.prefix_len = a.prefix_len;
  g.prefix_group = a.prefix_group > 0 ? a.prefix_group : 1;
  g.prefix_batch = a.prefix_batch_stride;
  g.kv_rows = a.kv_rows;
  return g;
}

// Element offset of (batch b, query i, q head h) in q, out, gout and gq.
GTPO_ATTN_HD int64_t q_offset(const Geom& g, int64_t b, int64_t i, int64_t h) {
  return (b * g.q_len + i) * g.q_row + h * g.dim;
}
// Element offset of (batch b, key j, kv head kvh) in k and v (which may be strided by kv_batch_stride).
GTPO_ATTN_HD int64_t kv_offset(const Geom& g, int64_t b, int64_t j, int64_t kvh) {
  return b * g.kv_batch + j * g.kv_row + kvh * g.dim;
}
// Start of key (or value) row j of kv head kvh for batch entry b, from the shared prefix below prefix_len;
// with kv_rows, from cache entry kv_rows[b].
GTPO_ATTN_HD const float* kv_row_ptr(const Geom& g, const float* own, const float* prefix, int64_t b, int64_t j,
                                     int64_t kvh) {
  const int64_t e = g.kv_rows ? g.kv_rows[b] : b;
  return j < g.prefix_len ? prefix + (e / g.prefix_group) * g.prefix_batch + j * g.kv_row + kvh * g.dim
                          : own + kv_offset(g, e, j, kvh);
}
// The same element in gk and gv, which are always dense [batch, kv_len, kv_heads, dim].
GTPO_ATTN_HD int64_t kv_grad_offset(const Geom& g, int64_t b, int64_t j, int64_t kvh) {
  return (b * g.kv_len + j) * g.kv_row + kvh * g.dim;
}
// Index of (b, h, i) in lse and the other per-query statistics, laid out [batch, q_heads, q_len].
GTPO_ATTN_HD int64_t stat_index(const Geom& g, int64_t b, int64_t h, int64_t i) {
  return (b * g.q_heads + h) * g.q_len + i;
}
GTPO_ATTN_HD int64_t kv_head_of(const Geom& g, int64_t h) { return h / g.group; }

// Query i exists (tiles round q_len up).
GTPO_ATTN_HD bool query_ok(const Geom& g, int64_t i) { return i >= 0 && i < g.q_len; }
// Key j exists and is not masked out for batch entry b.
GTPO_ATTN_HD bool key_ok(const Geom& g, int64_t b, int64_t j) {
  return j >= 0 && j < g.kv_len && (g.mask == nullptr || g.mask[b * g.kv_len + j] != 0);
}
// Causality: query i (at position i + offset) sees key j iff j <= i + offset.
GTPO_ATTN_HD bool causal_ok(const Geom& g, int64_t i, int64_t j) { return j <= i + g.offset; }
GTPO_ATTN_HD bool visible(const Geom& g, int64_t b, int64_t i, int64_t j) {
  return query_ok(g, i) && causal_ok(g, i, j) && key_ok(g, b, j);
}
// Keys [0, key_end(i_end)) may be visible to some query below i_end; none at or above it is.
GTPO_ATTN_HD int64_t key_end(const Geom& g, int64_t i_end) {
  const int64_t e = i_end + g.offset;
  return e < 0 ? 0 : (e > g.kv_len ? g.kv_len : e);
}
// Queries below first_query(j0) see no key at or above j0.
GTPO_ATTN_HD int64_t first_query(const Geom& g, int64_t j0) {
  const int64_t f = j0 - g.offset;
  return f < 0 ? 0 : f;
}

}  // namespace gtpo::cuda::attn
