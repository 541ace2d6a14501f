#include "runtime/ops/attention.h"

#include <algorithm>
#include <cmath>

#include "runtime/ops/embedding.h"
#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

// Validates q [B, Tq, Hq, D], k, v [B, Tk, Hkv, D] (Tk = k.size(1), the cache length for attention_cached;
// rows_of_k: k's batch may differ, q's entries being rows of it) and fills the shape part of the backend
// arguments.
AttentionArgs check_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                              bool rows_of_k = false) {
  detail::check_f32(op, q, "q");
  detail::check_f32(op, k, "k");
  detail::check_f32(op, v, "v");
  detail::check_same_device(op, q, k);
  detail::check_same_device(op, q, v);
  GTPO_CHECK(q.rank() == 4, op, ": q must be [batch, q_len, heads, head_dim], got ", q.describe());
  GTPO_CHECK(k.rank() == 4, op, ": k must be [batch, kv_len, kv_heads, head_dim], got ", k.describe());
  GTPO_CHECK(k.shape() == v.shape(), op, ": k ", k.shape(), " and v ", v.shape(), " must have the same shape");
  GTPO_CHECK(rows_of_k || q.size(0) == k.size(0), op, ": batch differs: q ", q.shape(), " and k ", k.shape());
  GTPO_CHECK(q.size(3) == k.size(3), op, ": head_dim differs: q ", q.shape(), " and k ", k.shape());
  GTPO_CHECK(q.size(3) > 0, op, ": head_dim must be positive, got q ", q.shape());
  GTPO_CHECK(k.size(2) > 0 && q.size(2) % k.size(2) == 0, op, ": q heads (", q.size(2),
             ") must be a multiple of kv heads (", k.size(2), "): q ", q.shape(), ", k ", k.shape());
  GTPO_CHECK(std::isfinite(scale), op, ": scale must be finite, got ", scale);
  AttentionArgs a;
  a.batch = q.size(0);
  a.q_len = q.size(1);
  a.q_heads = q.size(2);
  a.head_dim = q.size(3);
  a.kv_len = k.size(1);
  a.kv_heads = k.size(2);
  a.scale = scale != 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  return a;
}

// The mask as a dense i32 [B, kv_len] (undefined when none). A [B, mask_cols] mask with more columns (a
// cache-sized mask) is cut down to its first kv_len columns.
Tensor check_mask(const char* op, const Tensor& mask, const Tensor& q, int64_t kv_len, int64_t max_cols) {
  if (!mask.defined()) return mask;
  detail::check_i32(op, mask, "key_mask");
  detail::check_same_device(op, q, mask);
  const bool ok_cols = mask.rank() == 2 && (mask.size(1) == kv_len || mask.size(1) == max_cols);
  GTPO_CHECK(ok_cols && mask.size(0) == q.size(0), op, ": key_mask must be i32 [batch, kv_len] = [", q.size(0), ", ",
             kv_len, "]", (max_cols != kv_len ? " (or [batch, cache_len])" : ""), ", got ", mask.describe());
  if (mask.size(1) == kv_len) return mask;
  Tensor cut = Tensor::empty(Shape{mask.size(0), kv_len}, mask.device(), DType::i32);
  mask.backend().copy_2d(cut.raw_data(), kv_len, mask.raw_data(), mask.size(1), mask.size(0), kv_len,
                         sizeof(int32_t));
  return cut;
}

// out = attention(q, k, v): [B, Tq, Hq, D]; lse [B, Hq, Tq] is only needed by backward.
struct AttentionBackward final : Node {
  SavedTensor q, k, v, out, lse, mask, query_range;
  AttentionArgs args;
  const char* name() const override { return "AttentionBackward"; }

  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gout = grads[0];  // [B, Tq, Hq, D]
    if (!gout.defined()) return {Tensor(), Tensor(), Tensor()};
    Tensor qs = q.unpack(name()), ks = k.unpack(name()), vs = v.unpack(name());
    Tensor os = out.unpack(name()), ls = lse.unpack(name()), ms = mask.unpack(name());
    Tensor rs = query_range.unpack(name());
    AttentionArgs a = args;
    a.key_mask = ms.defined() ? ms.data_i32() : nullptr;
    a.query_range = rs.defined() ? rs.data_i32() : nullptr;
    // The backend writes all three; gk, gv are dense [B, Tk, Hkv, D].
    Tensor gq = Tensor::empty(qs.shape(), gout.device());
    Tensor gk = Tensor::empty(ks.shape(), gout.device());
    Tensor gv = Tensor::empty(vs.shape(), gout.device());
    gout.backend().attention_backward(a, qs.data(), ks.data(), vs.data(), os.data(), ls.data(), gout.data(),
                                      gq.data(), gk.data(), gv.data());
    return {needs_input_grad(0) ? gq : Tensor(), needs_input_grad(1) ? gk : Tensor(),
            needs_input_grad(2) ? gv : Tensor()};
  }
  void release_saved() override { release_all(q, k, v, out, lse, mask, query_range); }
};

// query_range i32 [B, 2] on q's device, each row 0 <= begin <= end <= Tq (checked on the host).
void check_query_range(const Tensor& range, const Tensor& q) {
  detail::check_i32("attention", range, "query_range");
  detail::check_same_device("attention", q, range);
  GTPO_CHECK(range.rank() == 2 && range.size(0) == q.size(0) && range.size(1) == 2,
             "attention: query_range must be i32 [batch, 2] = [", q.size(0), ", 2], got ", range.describe());
  const std::vector<int32_t> r = range.to_int_vector();
  for (int64_t b = 0; b < q.size(0); ++b) {
    const int32_t begin = r[static_cast<size_t>(2 * b)], end = r[static_cast<size_t>(2 * b + 1)];
    GTPO_CHECK(0 <= begin && begin <= end && end <= q.size(1), "attention: query_range of entry ", b, " is [",
               begin, ", ", end, "), outside 0 <= begin <= end <= q_len = ", q.size(1));
  }
}

}  // namespace

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& key_mask, float scale,
                 const Tensor& query_range) {
  AttentionArgs a = check_attention("attention", q, k, v, scale);
  Tensor mask = check_mask("attention", key_mask, q, a.kv_len, a.kv_len);
  a.key_mask = mask.defined() ? mask.data_i32() : nullptr;
  if (query_range.defined()) check_query_range(query_range, q);
  // A backend without query ranges computes every query; the caller reads only those in the range.
  const bool skip = query_range.defined() && q.backend().supports(Capability::attention_query_range);
  a.query_range = skip ? query_range.data_i32() : nullptr;
  Tensor out = Tensor::empty(q.shape(), q.device());                            // [B, Tq, Hq, D]
  Tensor lse = Tensor::empty(Shape{a.batch, a.q_heads, a.q_len}, q.device());  // [B, Hq, Tq]
  q.backend().attention_forward(a, q.data(), k.data(), v.data(), out.data(), lse.data());
  if (should_record({&q, &k, &v})) {
    // Backward recomputes scores from q, k and the lse: no [T, T] tensor is saved.
    auto node = std::make_shared<AttentionBackward>();
    node->q = SavedTensor(q);
    node->k = SavedTensor(k);
    node->v = SavedTensor(v);
    node->out = SavedTensor(out);
    node->lse = SavedTensor(lse);
    node->mask = SavedTensor(mask);
    node->query_range = SavedTensor(skip ? query_range : Tensor());
    node->args = a;
    node->args.key_mask = nullptr;  // re-read from the saved tensors at backward time
    node->args.query_range = nullptr;
    attach_node(node, {&q, &k, &v}, {&out});
  }
  return out;
}

namespace detail {

// q's entries spread over every cache entry (an entry nobody feeds takes entry 0's query and mask), the full
// batch run, and the rows' outputs gathered back. Each entry's attention reads only its own query, mask and
// cache entry, so the rows get the full batch's bits.
Tensor attention_cached_every_row(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache,
                                  int64_t kv_len, const Tensor& key_mask, const SharedPrefix& prefix,
                                  const Tensor& cache_rows, const std::vector<int32_t>& rows, float scale) {
  check_mask("attention_cached", key_mask, q, kv_len, k_cache.size(1));  // before the host reads its rows
  const int64_t entries = k_cache.size(0), cols = key_mask.defined() ? key_mask.size(1) : 0;
  std::vector<int32_t> entry_query(static_cast<size_t>(entries), 0);
  for (size_t b = 0; b < rows.size(); ++b)
    entry_query[static_cast<size_t>(rows[b])] = static_cast<int32_t>(b);
  Tensor every_mask;
  if (key_mask.defined()) {
    const std::vector<int32_t> some = key_mask.to_int_vector();
    std::vector<int32_t> every(static_cast<size_t>(entries * cols));
    for (int64_t e = 0; e < entries; ++e)
      std::copy_n(some.begin() + entry_query[static_cast<size_t>(e)] * cols, cols, every.begin() + e * cols);
    every_mask = Tensor::from_ints(every, Shape{entries, cols}, q.device());
  }
  const Tensor every_q = gather_rows(q, Tensor::from_ints(entry_query, Shape{entries}, q.device()));
  return gather_rows(attention_cached(every_q, k_cache, v_cache, kv_len, every_mask, prefix, Tensor(), scale),
                     cache_rows);
}

}  // namespace detail

Tensor attention_cached(const Tensor& q, const Tensor& k_cache, const Tensor& v_cache, int64_t kv_len,
                        const Tensor& key_mask, const SharedPrefix& prefix, const Tensor& cache_rows, float scale) {
  if (cache_rows.defined()) {
    detail::check_i32("attention_cached", cache_rows, "cache_rows");
    detail::check_same_device("attention_cached", q, cache_rows);
  }
  // With cache_rows, q's batch is some of the cache's entries, checked below instead of being equal.
  AttentionArgs a = check_attention("attention_cached", q, k_cache, v_cache, scale, cache_rows.defined());
  std::vector<int32_t> rows;
  if (cache_rows.defined()) {
    GTPO_CHECK(cache_rows.rank() == 1 && cache_rows.size(0) == q.size(0), "attention_cached: cache_rows must be i32 [",
               q.size(0), "] (q's batch), got ", cache_rows.describe());
    rows = cache_rows.to_int_vector();
    for (size_t b = 0; b < rows.size(); ++b)
      GTPO_CHECK(rows[b] >= 0 && rows[b] < k_cache.size(0), "attention_cached: cache_rows[", b,
                 "] = ", rows[b], " is outside the cache's ", k_cache.size(0), " entries");
    if (!q.backend().supports(Capability::attention_kv_rows))
      return detail::attention_cached_every_row(q, k_cache, v_cache, kv_len, key_mask, prefix, cache_rows,
                                                rows, scale);
    a.kv_rows = cache_rows.data_i32();
  }
  const int64_t cache_len = a.kv_len;
  GTPO_CHECK(kv_len >= 0 && kv_len <= cache_len, "attention_cached: kv_len ", kv_len, " is outside the cache ",
             k_cache.shape());
  GTPO_CHECK(a.q_len <= kv_len, "attention_cached: q ", q.shape(), " has more positions than kv_len ", kv_len);
  GTPO_CHECK(!should_record({&q, &k_cache, &v_cache}), "attention_cached: inference only, but an input requires "
             "grad with grad mode on; use attention() or a NoGradGuard");
  Tensor mask = check_mask("attention_cached", key_mask, q, kv_len, cache_len);
  a.kv_len = kv_len;
  a.kv_batch_stride = cache_len * a.kv_heads * a.head_dim;  // read the valid prefix of each batch entry in place
  a.key_mask = mask.defined() ? mask.data_i32() : nullptr;
  if (prefix.length > 0) {
    const Tensor& pk = prefix.keys;
    const Tensor& pv = prefix.values;
    const int64_t cache_batch = k_cache.size(0);  // q's batch unless q holds some rows of the cache
    GTPO_CHECK(prefix.group >= 1 && cache_batch % prefix.group == 0, "attention_cached: batch ", cache_batch,
               " is not a multiple of the prefix group ", prefix.group);
    const Shape want{cache_batch / prefix.group, pk.defined() ? pk.size(1) : 0, a.kv_heads, a.head_dim};
    GTPO_CHECK(pk.defined() && pv.defined() && pk.shape() == want && pv.shape() == want && pk.dtype() == DType::f32 &&
                   pv.dtype() == DType::f32 && pk.device() == q.device() && pv.device() == q.device(),
               "attention_cached: shared prefix must be f32 ", want, " on ", device_name(q.device()), ", got ",
               pk.defined() ? pk.describe() : "undefined", " and ", pv.defined() ? pv.describe() : "undefined");
    GTPO_CHECK(prefix.length <= pk.size(1) && prefix.length <= kv_len, "attention_cached: prefix length ",
               prefix.length, " exceeds the prefix rows ", pk.size(1), " or kv_len ", kv_len);
    a.prefix_k = pk.data();
    a.prefix_v = pv.data();
    a.prefix_len = prefix.length;
    a.prefix_group = prefix.group;
    a.prefix_batch_stride = pk.size(1) * a.kv_heads * a.head_dim;
  }
  Tensor out = Tensor::empty(q.shape(), q.device());
  Tensor lse = Tensor::empty(Shape{a.batch, a.q_heads, a.q_len}, q.device());
  q.backend().attention_forward(a, q.data(), k_cache.data(), v_cache.data(), out.data(), lse.data());
  return out;
}

}  // namespace gtpo::ops
