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
#include <type_traits>
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

typedef int32_t IntLanes __attribute__((vector_size(kLanes * sizeof(int32_t))));

// lane_sum of kLanes vectors at once: sums[s] = lane_sum(v[s]), each by lane_sum's own tree (the same pairs
// added at every level; IEEE addition is commutative, so which operand comes first changes no bit), the
// levels run across the vectors with shuffles: 4 (AVX2: 3) levels of adds for kLanes sums instead of per
// sum. Level by level, as lane_sum's names: s8 = lower half + upper half, s4 = s8[0:4] + s8[4:8],
// s2a = s4[0] + s4[2], s2b = s4[1] + s4[3], sum = s2a + s2b.
inline Lanes lane_sums(const Lanes* v) {
#if defined(__AVX512F__)
  Lanes s8[8], s4[4], s2[2];
  for (int p = 0; p < 8; ++p)  // s8[p] = [s8 of v[2p] | s8 of v[2p + 1]]
    s8[p] = __builtin_shufflevector(v[2 * p], v[2 * p + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
            __builtin_shufflevector(v[2 * p], v[2 * p + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                                    31);
  for (int p = 0; p < 4; ++p)  // s4[p], quarter q = s4 of v[4p + q]
    s4[p] = __builtin_shufflevector(s8[2 * p], s8[2 * p + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26,
                                    27) +
            __builtin_shufflevector(s8[2 * p], s8[2 * p + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30,
                                    31);
  for (int p = 0; p < 2; ++p)  // s2[p], quarter q = [s2a, s2b of v[8p + q], s2a, s2b of v[8p + 4 + q]]
    s2[p] = __builtin_shufflevector(s4[2 * p], s4[2 * p + 1], 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28,
                                    29) +
            __builtin_shufflevector(s4[2 * p], s4[2 * p + 1], 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30,
                                    31);
  // sums of v[q + 4e] at lane 4q + e, then put in order
  const Lanes sums = __builtin_shufflevector(s2[0], s2[1], 0, 2, 16, 18, 4, 6, 20, 22, 8, 10, 24, 26, 12, 14, 28, 30) +
                     __builtin_shufflevector(s2[0], s2[1], 1, 3, 17, 19, 5, 7, 21, 23, 9, 11, 25, 27, 13, 15, 29, 31);
  return __builtin_shufflevector(sums, sums, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#else
  Lanes s4[4], s2[2];
  for (int p = 0; p < 4; ++p)  // s4[p], half q = s4 of v[2p + q]
    s4[p] = __builtin_shufflevector(v[2 * p], v[2 * p + 1], 0, 1, 2, 3, 8, 9, 10, 11) +
            __builtin_shufflevector(v[2 * p], v[2 * p + 1], 4, 5, 6, 7, 12, 13, 14, 15);
  for (int p = 0; p < 2; ++p)  // s2[p], half q = [s2a, s2b of v[4p + q], s2a, s2b of v[4p + 2 + q]]
    s2[p] = __builtin_shufflevector(s4[2 * p], s4[2 * p + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
            __builtin_shufflevector(s4[2 * p], s4[2 * p + 1], 2, 3, 10, 11, 6, 7, 14, 15);
  // sums of v[q + 2e] at lane 4q + e, then put in order
  const Lanes sums = __builtin_shufflevector(s2[0], s2[1], 0, 2, 8, 10, 4, 6, 12, 14) +
                     __builtin_shufflevector(s2[0], s2[1], 1, 3, 9, 11, 5, 7, 13, 15);
  return __builtin_shufflevector(sums, sums, 0, 4, 1, 5, 2, 6, 3, 7);
#endif
}

// Scores of kLanes consecutive keys [j0, j0 + kLanes) for one head (query vectors qv, head size Vecs
// vectors): dot()'s products and lane order for each key, its lane sums by lane_sums. The keys' rows are
// read once per block for every head (block outermost), instead of once per head.
template <int Vecs, typename KeyRow>
Lanes block_scores(const Lanes* qv, const KeyRow& key_row, int64_t j0, int64_t kv_col, float scale) {
  Lanes acc[kLanes];
  for (int s = 0; s < kLanes; ++s) {
    const float* k = key_row(j0 + s) + kv_col;
    Lanes a = {};
    for (int t = 0; t < Vecs; ++t) a += qv[t] * load(k + t * kLanes);
    acc[s] = a;
  }
  return scale * lane_sums(acc);
}

// Asks for rows [j0, j1) of `row` (each `width` floats) in the cache, one prefetch per 64-byte line.
template <typename Row>
inline void prefetch_rows(const Row& row, int64_t j0, int64_t j1, int64_t width) {
  for (int64_t j = j0; j < j1; ++j)
    for (int64_t e = 0; e < width; e += 64 / static_cast<int64_t>(sizeof(float))) __builtin_prefetch(row(j) + e);
}

constexpr int64_t kMaxVecs = 4;

// f(std::integral_constant<int, V>{}) for V = vecs, 1 <= vecs <= kMaxVecs: the templates' head size.
template <typename F>
void with_vecs(int64_t vecs, F&& f) {
  switch (vecs) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    default: f(std::integral_constant<int, 4>{}); break;
  }
}
// Heads whose running score maxima stay in vectors during the blocked scores (more: a scalar max per key).
constexpr int64_t kMaxHeadsInLanes = 64;

// Heads of a chunk whose weighted value sums stay in registers together (accumulator vectors at most).
constexpr int kAccumulators = kLanes == 16 ? 16 : 8;

// For heads [h0, h0 + count) (count <= kAccumulators / Vecs, all with a visible key): acc[h] += sum over
// visible keys j < kend, in index order, of p_h[j] * (value row j of h's kv head), and row_sum[h] += p_h[j]
// alongside: axpy's and the scalar loop's operations in their order (y + w * x per lane) for each head, with
// the accumulators in registers over all the keys (stored and reloaded per key, they were a store-to-load
// chain per key and head) and the heads side by side, so that a value row is read once per chunk of heads.
template <int Vecs, typename ValueRow>
void weighted_rows_of_heads(const float* probs, int64_t keys, int64_t h0, int count, int64_t group, int64_t kend,
                            const int32_t* mask, const ValueRow& value_row, int64_t d, float* acc, float* row_sum) {
  constexpr int kHeads = kAccumulators / Vecs;
  Lanes a[kHeads][Vecs] = {};  // (zeroed only to tell the compiler that heads >= count are never read)
  float s[kHeads] = {};
  for (int c = 0; c < kHeads; ++c) {
    if (c >= count) break;
    for (int t = 0; t < Vecs; ++t) a[c][t] = load(acc + (h0 + c) * d + t * kLanes);
    s[c] = row_sum[h0 + c];
  }
  for (int64_t j = 0; j < kend; ++j) {
    if (mask && mask[j] == 0) continue;
    const float* row = value_row(j);
    for (int c = 0; c < kHeads; ++c) {
      if (c >= count) break;
      const float p = probs[(h0 + c) * keys + j];
      s[c] += p;
      const Lanes w = Lanes{} + p;
      const float* x = row + ((h0 + c) / group) * d;
      for (int t = 0; t < Vecs; ++t) a[c][t] = a[c][t] + w * load(x + t * kLanes);
    }
  }
  for (int c = 0; c < kHeads; ++c) {
    if (c >= count) break;
    for (int t = 0; t < Vecs; ++t) store(acc + (h0 + c) * d + t * kLanes, a[c][t]);
    row_sum[h0 + c] = s[c];
  }
}

// The sizes of one decode_forward call, shared by its passes.
struct DecodeShape {
  int64_t d, heads, group, keys, q_row, kv_row;
  int64_t vecs;  // head sizes of 1 to kMaxVecs whole vectors take the blocked scores and the value sums in
                 // registers; 0: neither
  float scale;
};

// Pass 1, scores [head, key] of keys [0, kend) and each head's maximum: the scale multiplies each dot
// product; within one ulp of the blocked kernel's (scale q) . k, which the decode tests tolerate. Whole
// blocks of kLanes keys first (head sizes of whole vectors), then the rest one key at a time, with the same
// bits per score.
void decode_scores(const DecodeShape& s, const KvRows& rows, const float* qi, const int32_t* mask,
                   int64_t kend, float* scores, float* row_max) {
  const int64_t d = s.d, heads = s.heads, keys = s.keys, kv_row = s.kv_row;
  auto key_row = [&](int64_t j) { return rows.key(j); };
  auto value_row = [&](int64_t j) { return rows.value(j); };
  std::fill(row_max, row_max + heads, kNegInf);
  const int64_t blocked = s.vecs > 0 ? kend / kLanes * kLanes : 0;
  if (blocked > 0) {
    Lanes max_lanes[kMaxHeadsInLanes];
    const bool lanes_max = heads <= kMaxHeadsInLanes;
    for (int64_t h = 0; h < heads && lanes_max; ++h) max_lanes[h] = Lanes{} + kNegInf;
    with_vecs(s.vecs, [&](auto vectors) {  // the head size as a constant, once per row
      constexpr int V = decltype(vectors)::value;
      for (int64_t j0 = 0; j0 < blocked; j0 += kLanes) {
        // The next block's key rows and this block's value rows, a cache line at a time: decode is bound
        // by streaming the cache from memory, and the hardware prefetcher restarts at every 4 KB page
        // (8 key rows of the larger TRL job); this took its decode attention from 10 to 13 GB/s.
        prefetch_rows(key_row, j0 + kLanes, std::min(j0 + 2 * kLanes, kend), kv_row);
        prefetch_rows(value_row, j0, j0 + kLanes, kv_row);
        if (j0 + kLanes == blocked) prefetch_rows(value_row, blocked, kend, kv_row);
        for (int64_t h = 0; h < heads; ++h) {
          Lanes qv[V];
          for (int t = 0; t < V; ++t) qv[t] = load(qi + h * d + t * kLanes);
          Lanes sc = block_scores<V>(qv, key_row, j0, (h / s.group) * d, s.scale);
          if (mask) {
            IntLanes visible;
            std::memcpy(&visible, mask + j0, sizeof(IntLanes));
            sc = visible == 0 ? Lanes{} + kNegInf : sc;
          }
          store(scores + h * keys + j0, sc);
          // max is exact: the lanes' order changes at most the sign of a zero maximum, which no result
          // sees (exp(s - m) and m + log(sum) with sum >= 1 are the same for m = +0 and -0)
          if (lanes_max) {
            max_lanes[h] = sc > max_lanes[h] ? sc : max_lanes[h];
          } else {
            for (int l = 0; l < kLanes; ++l) row_max[h] = std::max(row_max[h], sc[l]);
          }
        }
      }
    });
    for (int64_t h = 0; h < heads && lanes_max; ++h)
      for (int l = 0; l < kLanes; ++l) row_max[h] = std::max(row_max[h], max_lanes[h][l]);
  }
  for (int64_t j = blocked; j < kend; ++j) {
    const bool hidden = mask && mask[j] == 0;
    for (int64_t h = 0; h < heads; ++h) {
      const float sc = hidden ? kNegInf : s.scale * dot(qi + h * d, key_row(j) + (h / s.group) * d, d);
      scores[h * keys + j] = sc;
      row_max[h] = std::max(row_max[h], sc);
    }
  }
}

// Pass 2, probabilities and the weighted sum of value rows, keys in index order. A head's exps are one loop
// over its keys (it vectorises; a hidden key's is computed and never used), then its sums: the same terms in
// the same order as one key at a time.
void decode_weighted_sum(const DecodeShape& s, const KvRows& rows, const int32_t* mask, int64_t kend,
                         float* scores, const float* row_max, float* acc, float* row_sum) {
  const int64_t d = s.d, heads = s.heads, keys = s.keys;
  auto value_row = [&](int64_t j) { return rows.value(j); };
  std::fill(acc, acc + heads * d, 0.0f);
  std::fill(row_sum, row_sum + heads, 0.0f);
  for (int64_t h = 0; h < heads; ++h) {
    if (row_max[h] == kNegInf) continue;
    float* ph = scores + h * keys;
    const float mh = row_max[h];
    for (int64_t j = 0; j < kend; ++j) ph[j] = cpu_math::exp_bounded(ph[j] - mh);
  }
  // Chunks of heads side by side where they fit in registers together and all see a key, else one head at
  // a time; head sizes of no whole vector count by axpy.
  const int64_t chunk = s.vecs > 0 ? kAccumulators / s.vecs : 1;
  auto sum_heads = [&](int64_t h0, int count) {
    with_vecs(s.vecs, [&](auto v) {
      weighted_rows_of_heads<decltype(v)::value>(scores, keys, h0, count, s.group, kend, mask, value_row, d,
                                                 acc, row_sum);
    });
  };
  for (int64_t h0 = 0; h0 < heads; h0 += chunk) {
    const int count = static_cast<int>(std::min(chunk, heads - h0));
    bool all_live = true;
    for (int c = 0; c < count; ++c) all_live = all_live && row_max[h0 + c] != kNegInf;
    if (s.vecs > 0 && all_live) {
      sum_heads(h0, count);
      continue;
    }
    for (int64_t h = h0; h < h0 + count; ++h) {
      if (row_max[h] == kNegInf) continue;
      if (s.vecs > 0) {
        sum_heads(h, 1);
        continue;
      }
      const float* ph = scores + h * keys;
      float* acc_h = acc + h * d;
      const int64_t kv_col = (h / s.group) * d;
      for (int64_t j = 0; j < kend; ++j) {
        if (mask && mask[j] == 0) continue;
        row_sum[h] += ph[j];
        axpy(ph[j], value_row(j) + kv_col, acc_h, d);
      }
    }
  }
}

}  // namespace

void decode_forward(const AttentionArgs& a, const float* q, const float* k, const float* v, float* out,
                    float* lse) {
  const int64_t d = a.head_dim, heads = a.q_heads, offset = a.kv_len - a.q_len;
  const int64_t kv_row = a.kv_heads * d;
  const DecodeShape shape{d,
                          heads,
                          a.q_heads / a.kv_heads,
                          std::max<int64_t>(a.kv_len, 1),
                          heads * d,
                          kv_row,
                          d % kLanes == 0 && d / kLanes <= kMaxVecs ? d / kLanes : 0,
                          a.scale};
  // A task is one batch entry: its key and value rows (all heads of a position are contiguous) are then
  // read front to back, once per query, which the hardware prefetcher streams. Reading one head at a time
  // touched a quarter of each row at a 1 KB stride and ran at memory latency, not bandwidth.
  parallel_for(a.batch, 1, [&](int64_t tb, int64_t te) {
    // Per-thread scratch, grown as needed and kept: parallel_for hands out one row per chunk, and fresh
    // vectors per row meant four allocations per row, layer and decode step. Every element read is
    // written first for the current row.
    thread_local std::vector<float> scores, acc, row_max, row_sum;
    scores.resize(static_cast<size_t>(heads * shape.keys));  // [head, key]
    acc.resize(static_cast<size_t>(heads * d));
    row_max.resize(static_cast<size_t>(heads));
    row_sum.resize(static_cast<size_t>(heads));
    for (int64_t b = tb; b < te; ++b) {
      const KvRows rows(a, k, v, b);
      const int32_t* mask = a.key_mask ? a.key_mask + b * a.kv_len : nullptr;
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int64_t kend = std::clamp<int64_t>(i + offset + 1, 0, a.kv_len);  // keys [0, kend) are causal
        decode_scores(shape, rows, q + (b * a.q_len + i) * shape.q_row, mask, kend, scores.data(),
                      row_max.data());
        decode_weighted_sum(shape, rows, mask, kend, scores.data(), row_max.data(), acc.data(),
                            row_sum.data());
        for (int64_t h = 0; h < heads; ++h) {
          float* o = out + (b * a.q_len + i) * shape.q_row + h * d;
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
