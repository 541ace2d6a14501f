// Attention for a few queries against a long key range: the KV-cache decode step (q_len = 1 per row) and
// short continuations. The blocked kernel of cpu_attention.cpp tiles 64 queries at a time, so with one
// query it spent most of its time filling and zeroing mostly-empty tiles (≈ 45% of a rollout). Here a
// task owns one batch entry: each head's scores are dot products against key rows,
// softmax runs over the whole visible range at once (two passes, no rescaling), and the output is a
// weighted sum of value rows, all vectorised across head_dim.
//
// Every sum has a fixed order (lanes of head_dim, then a fixed tree over lanes; keys in index order), and a
// task writes only its own rows, so results are the same for any thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/cpu/cpu_attention_decode.h"
#include "runtime/cpu/cpu_vec_math.h"
#include "runtime/parallel.h"

namespace gtpo::cpu_attention {

namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline Lanes load(const float* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof(Lanes));
  return v;
}
inline void store(float* p, Lanes v) { std::memcpy(p, &v, sizeof(Lanes)); }

// Sum of the lanes as a fixed tree (halves added pairwise), so the order is fixed and the reduction costs
// log2(kLanes) vector adds instead of a kLanes-long dependent scalar chain, which dominated decode scores.
// The tree as register halves: the upper half of the lanes added onto the lower, then again, the same pairs
// in the same order as a scalar loop (buf[l] += buf[l + width] for width = kLanes/2, ..., 1), so the same
// bits; through memory it was a store, a reload and 15 dependent scalar adds per decode score.
inline float lane_sum(Lanes v) {
  typedef float Eight __attribute__((vector_size(8 * sizeof(float))));
  typedef float Four __attribute__((vector_size(4 * sizeof(float))));
#if defined(__AVX512F__)
  const Eight s8 = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) +
                   __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
#else
  const Eight s8 = v;
#endif
  const Four s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) + __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const float s2a = s4[0] + s4[2], s2b = s4[1] + s4[3];
  return s2a + s2b;
}

// a . b over d elements: lane-wise products summed per lane, lanes summed as a tree, tail last.
inline float dot(const float* a, const float* b, int64_t d) {
  Lanes acc = {};
  int64_t e = 0;
  for (; e + kLanes <= d; e += kLanes) acc += load(a + e) * load(b + e);
  float s = lane_sum(acc);
  for (; e < d; ++e) s += a[e] * b[e];
  return s;
}

// y[0, d) += w * x[0, d)
inline void axpy(float w, const float* x, float* y, int64_t d) {
  int64_t e = 0;
  const Lanes wv = Lanes{} + w;
  for (; e + kLanes <= d; e += kLanes) store(y + e, load(y + e) + wv * load(x + e));
  for (; e < d; ++e) y[e] += w * x[e];
}

// Head sizes up to this (in whole vectors) keep a head's weighted sum in registers over all its keys.
constexpr int64_t kMaxRegisterDim = 4 * kLanes;

// acc[0, d) += sum over visible keys j < kend, in index order, of p[j] * (value row j)[kv_col, kv_col + d),
// and sum += p[j] alongside: axpy's and the scalar loop's operations in their order (y + w * x per lane), with
// the accumulator in registers instead of stored and reloaded per key (a store-to-load chain per key and
// head). d is a multiple of kLanes, at most kMaxRegisterDim.
template <typename ValueRow>
void weighted_rows_in_registers(const float* p, int64_t kend, const int32_t* mask, const ValueRow& value_row,
                                int64_t kv_col, int64_t d, float* acc, float& sum) {
  const int64_t vectors = d / kLanes;
  Lanes a[kMaxRegisterDim / kLanes];
  for (int64_t t = 0; t < vectors; ++t) a[t] = load(acc + t * kLanes);
  float s = sum;
  for (int64_t j = 0; j < kend; ++j) {
    if (mask && mask[j] == 0) continue;
    s += p[j];
    const Lanes w = Lanes{} + p[j];
    const float* x = value_row(j) + kv_col;
    for (int64_t t = 0; t < vectors; ++t) a[t] = a[t] + w * load(x + t * kLanes);
  }
  for (int64_t t = 0; t < vectors; ++t) store(acc + t * kLanes, a[t]);
  sum = s;
}

}  // namespace

void decode_forward(const AttentionArgs& a, const float* q, const float* k, const float* v, float* out,
                    float* lse) {
  const int64_t d = a.head_dim, heads = a.q_heads, group = a.q_heads / a.kv_heads, offset = a.kv_len - a.q_len;
  const int64_t q_row = heads * d, kv_row = a.kv_heads * d;
  const int64_t kv_batch = a.kv_batch_stride > 0 ? a.kv_batch_stride : a.kv_len * kv_row;
  const int64_t keys = std::max<int64_t>(a.kv_len, 1);
  // A task is one batch entry: its key and value rows (all heads of a position are contiguous) are then
  // read front to back, once per query, which the hardware prefetcher streams. Reading one head at a time
  // touched a quarter of each row at a 1 KB stride and ran at memory latency, not bandwidth.
  parallel_for(a.batch, 1, [&](int64_t tb, int64_t te) {
    // Per-thread scratch, grown as needed and kept: parallel_for hands out one row per chunk, and fresh
    // vectors per row meant four allocations per row, layer and decode step. Every element read is
    // written first for the current row.
    thread_local std::vector<float> scores, acc, row_max, row_sum;
    scores.resize(static_cast<size_t>(heads * keys));  // [head, key]
    acc.resize(static_cast<size_t>(heads * d));
    row_max.resize(static_cast<size_t>(heads));
    row_sum.resize(static_cast<size_t>(heads));
    for (int64_t b = tb; b < te; ++b) {
      const float* kb = k + b * kv_batch;
      const float* vb = v + b * kv_batch;
      // Positions below prefix_len live in the group's shared prefix (read from cache by every row of the
      // group, instead of from DRAM once per row).
      const float* pk = a.prefix_len > 0 ? a.prefix_k + (b / a.prefix_group) * a.prefix_batch_stride : nullptr;
      const float* pv = a.prefix_len > 0 ? a.prefix_v + (b / a.prefix_group) * a.prefix_batch_stride : nullptr;
      auto key_row = [&](int64_t j) { return (j < a.prefix_len ? pk : kb) + j * kv_row; };
      auto value_row = [&](int64_t j) { return (j < a.prefix_len ? pv : vb) + j * kv_row; };
      const int32_t* mask = a.key_mask ? a.key_mask + b * a.kv_len : nullptr;
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t kend = std::clamp<int64_t>(i + offset + 1, 0, a.kv_len);  // keys [0, kend) are causal
        const float* qi = q + (b * a.q_len + i) * q_row;
        // Pass 1, scores: the scale multiplies each dot product; within one ulp of the blocked kernel's
        // (scale q) . k, which the decode tests tolerate.
        std::fill(row_max.begin(), row_max.end(), kNegInf);
        for (int64_t j = 0; j < kend; ++j) {
          const bool hidden = mask && mask[j] == 0;
          for (int64_t h = 0; h < heads; ++h) {
            const float s = hidden ? kNegInf : a.scale * dot(qi + h * d, key_row(j) + (h / group) * d, d);
            scores[h * keys + j] = s;
            row_max[h] = std::max(row_max[h], s);
          }
        }
        // Pass 2, probabilities and the weighted sum of value rows, keys in index order. A head's exps are
        // one loop over its keys (it vectorises; a hidden key's is computed and never used), then its
        // sums: the same terms in the same order as one key at a time.
        std::fill(acc.begin(), acc.end(), 0.0f);
        std::fill(row_sum.begin(), row_sum.end(), 0.0f);
        for (int64_t h = 0; h < heads; ++h) {
          if (row_max[h] == kNegInf) continue;
          float* ph = scores.data() + h * keys;
          const float mh = row_max[h];
          for (int64_t j = 0; j < kend; ++j) ph[j] = cpu_math::exp_bounded(ph[j] - mh);
          float* acc_h = acc.data() + h * d;
          const int64_t kv_col = (h / group) * d;
          if (d % kLanes == 0 && d <= kMaxRegisterDim) {
            weighted_rows_in_registers(ph, kend, mask, value_row, kv_col, d, acc_h, row_sum[h]);
            continue;
          }
          for (int64_t j = 0; j < kend; ++j) {
            if (mask && mask[j] == 0) continue;
            row_sum[h] += ph[j];
            axpy(ph[j], value_row(j) + kv_col, acc_h, d);
          }
        }
        for (int64_t h = 0; h < heads; ++h) {
          float* o = out + (b * a.q_len + i) * q_row + h * d;
          float* l_out = lse + (b * heads + h) * a.q_len + i;
          if (row_max[h] == kNegInf) {  // no visible key: zeros and lse = -inf, as the contract says
            std::fill(o, o + d, 0.0f);
            *l_out = kNegInf;
            continue;
          }
          const float inv = 1.0f / row_sum[h];
          for (int64_t e = 0; e < d; ++e) o[e] = acc[h * d + e] * inv;
          *l_out = row_max[h] + std::log(row_sum[h]);
        }
      }
    }
  });
}

}  // namespace gtpo::cpu_attention
