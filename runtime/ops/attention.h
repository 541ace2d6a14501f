// Fused causal multi-head self-attention (flash style on every backend: no [T, T] matrix is materialised).
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::ops {

// q [B, Tq, Hq, D]; k, v [B, Tk, Hkv, D] with Hq % Hkv == 0 (grouped-query heads: q head h reads kv head
// h / (Hq / Hkv); Hkv == 1 is multi-query). Causal: query i sees key j iff j <= i + (Tk - Tq).
// key_mask: optional i32 [B, Tk], nonzero = attend (padding). A query that sees no key outputs zeros.
// scale: 0 means 1/sqrt(D). Returns [B, Tq, Hq, D]; differentiable w.r.t. q, k and v.
// query_range (optional, i32 [B, 2], 0 <= begin <= end <= Tq): the caller reads only queries
// [query_range[b, 0], query_range[b, 1]) of batch entry b (a packed batch's copies of a shared prompt and its
// padding are the others). A backend whose supports(Capability::attention_query_range) is true skips the
// other queries (zero output, no gradient, no cost); any other backend computes them. Either way the queries
// in the range get the same values.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask = Tensor(),
                 float scale = 0.0f, const Tensor& query_range = Tensor());

// A prefix of the cache shared by groups of batch entries (the prompt of a group of samples): keys and
// values [B / group, Tp, Hkv, D], of which positions [0, length) replace positions [0, length) of every
// entry b's own cache rows, read from prefix entry b / group.
struct SharedPrefix {
  Tensor keys, values;
  int64_t length = 0;
  int64_t group = 1;
};

// Inference-only attention over a KV cache: k_cache, v_cache [B, Tmax, Hkv, D] of which the first kv_len
// positions are valid (read in place, not copied); q holds the last Tq <= kv_len positions. key_mask is
// i32 [B, kv_len] or [B, Tmax] (only its first kv_len columns are read). Throws when autograd would need to
// record (use attention() for training, or run under NoGradGuard). Positions [0, prefix.length) are read
// from the shared prefix.
// cache_rows (optional, i32 [Bq]): q's batch entries are some rows of the cache, entry b reading cache entry
// cache_rows[b] (and so prefix entry cache_rows[b] / prefix.group), as the rows still decoding while finished
// ones wait; key_mask is [Bq, ...], per q entry. A backend whose supports(Capability::attention_kv_rows) is
// true reads those entries in place; on any other the full batch runs (detail::attention_cached_every_row).
// The rows get the full batch's bits either way.
Tensor attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t kv_len,
                        const Tensor& key_mask = Tensor(), const SharedPrefix& prefix = {},
                        const Tensor& cache_rows = Tensor(), float scale = 0.0f);

namespace detail {
// attention_cached with cache_rows on a backend without attention_kv_rows (declared for its test).
Tensor attention_cached_every_row(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  int64_t kv_len, const Tensor& key_mask, const SharedPrefix& prefix,
                                  const Tensor& cache_rows, const std::vector<int32_t>& rows,
                                  float scale);  // rows: cache_rows on the host
}  // namespace detail

}  // namespace gtpo::ops
