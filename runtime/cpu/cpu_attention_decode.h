// The CPU attention path for a few queries per row (KV-cache decode); see cpu_attention_decode.cpp.
#pragma once
#include "runtime/backend.h"

namespace gtpo::cpu_attention {

// Up to this many queries per row, attention_forward takes the decode path.
constexpr int64_t kDecodeMaxQueries = 4;

// One batch entry's key and value rows, for both decode paths: positions below prefix_len live in the group's
// shared prefix (read from cache by every row of the group, instead of from DRAM once per row).
struct KvRows {
  const float *k, *v, *prefix_k, *prefix_v;
  int64_t prefix_len, row;
  // Batch entry B's rows under A (its cache row through kv_rows, its prefix entry, the cache's strides).
  KvRows(const AttentionArgs& a, const float* k_cache, const float* v_cache, int64_t b) {
    const int64_t entry = a.kv_rows ? a.kv_rows[b] : b;
    const int64_t prefix_entry = entry / a.prefix_group;
    row = a.kv_heads * a.head_dim;
    const int64_t batch = a.kv_batch_stride > 0 ? a.kv_batch_stride : a.kv_len * row;
    k = k_cache + entry * batch;
    v = v_cache + entry * batch;
    prefix_len = a.prefix_len;
    prefix_k = prefix_len > 0 ? a.prefix_k + prefix_entry * a.prefix_batch_stride : nullptr;
    prefix_v = prefix_len > 0 ? a.prefix_v + prefix_entry * a.prefix_batch_stride : nullptr;
  }
  const float* key(int64_t j) const { return (j < prefix_len ? prefix_k : k) + j * row; }
  const float* value(int64_t j) const { return (j < prefix_len ? prefix_v : v) + j * row; }
};

// Same contract as Backend::attention_forward.
void decode_forward(const AttentionArgs& args, const float* q, const float* k, const float* v, float* out,
                    float* lse);

}  // namespace gtpo::cpu_attention
