// The sampler's token choice on the host (the definition: runtime/token_choice.h). Each row is computed as
// the CUDA kernel's block computes it, lane by lane: the same lane sums in the same order, the same
// butterfly for the top-p mass, the same scan for the draw; so both backends give the same ids. Rows run
// in parallel, one row never split, so the thread count changes nothing.
#include <algorithm>
#include <functional>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/cpu_vec_math.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"
#include "runtime/token_choice.h"

namespace gtpo {

namespace {

using token_choice::choice_key;
constexpr int64_t kLanes = token_choice::kTokenChoiceLanes;
constexpr int kWarp = 32;

// One row's keys and weights (runtime/token_choice.h), computed once and read by every pass. Without a cut
// (tau 0 keeps every id) the keys are left empty: only the degenerate draw needs them then.
struct RowTerms {
  std::vector<uint32_t> key;
  std::vector<float> weight;
  std::vector<uint32_t> sorted;  // scratch for the thresholds
};

// CUDA's warp_sum over 32 values: v[l] += v[l ^ offset] for offsets 16, 8, 4, 2, 1 (every lane ends equal).
double butterfly(double v[kWarp]) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) {
    double next[kWarp];
    for (int l = 0; l < kWarp; ++l) next[l] = v[l] + v[l ^ offset];
    std::copy(next, next + kWarp, v);
  }
  return v[0];
}

// CUDA's block_sum (runtime/cuda/cuda_kernel_common.cuh) of one value per lane of a kLanes-thread block:
// each warp's butterfly, then a butterfly over the warp totals padded with zeros.
double block_sum_of(const double* lanes) {
  double totals[kWarp] = {};
  for (int64_t w = 0; w < kLanes / kWarp; ++w) {
    double v[kWarp];
    std::copy(lanes + w * kWarp, lanes + (w + 1) * kWarp, v);
    totals[w] = butterfly(v);
  }
  return butterfly(totals);
}

// Each lane's sum of the weights with key >= tau, in its ids' order.
void lane_sums(const RowTerms& row, int64_t n, uint32_t tau, double* lanes) {
  std::fill(lanes, lanes + kLanes, 0.0);
  const bool every_id = row.key.empty();
  for (int64_t base = 0; base < n; base += kLanes) {
    const int64_t m = std::min(kLanes, n - base);
    for (int64_t t = 0; t < m; ++t)
      if (every_id || row.key[base + t] >= tau) lanes[t] += static_cast<double>(row.weight[base + t]);
  }
}

double kept_mass(const RowTerms& row, int64_t n, uint32_t tau) {
  double lanes[kLanes];
  lane_sums(row, n, tau, lanes);
  return block_sum_of(lanes);
}

// The id of the largest key, lowest on ties.
int32_t largest_key_id(const uint32_t* key, int64_t n) {
  int64_t best = 0;
  for (int64_t k = 1; k < n; ++k)
    if (key[k] > key[best]) best = k;
  return static_cast<int32_t>(best);
}

// top-k: the k-th largest key, so that key >= tau keeps the k largest and their ties.
uint32_t top_k_threshold(RowTerms& row, int64_t n, int64_t k) {
  row.sorted.assign(row.key.begin(), row.key.begin() + n);
  std::nth_element(row.sorted.begin(), row.sorted.begin() + (k - 1), row.sorted.end(), std::greater<>());
  return row.sorted[static_cast<size_t>(k - 1)];
}

// top-p: the largest key >= tau whose kept mass reaches top_p times the mass kept at tau. The mass is
// monotone in the threshold and changes only at keys present in the row, so a binary search over the
// row's distinct keys finds the key the kernel's search over every integer finds.
uint32_t top_p_threshold(RowTerms& row, int64_t n, uint32_t tau, float top_p) {
  const double total = kept_mass(row, n, tau);
  if (!(total > 0.0)) return tau;  // nothing to weigh: the draw falls back to the largest key
  const double target = static_cast<double>(top_p) * total;
  row.sorted.clear();
  for (int64_t k = 0; k < n; ++k)
    if (row.key[k] >= tau) row.sorted.push_back(row.key[k]);
  std::sort(row.sorted.begin(), row.sorted.end());
  row.sorted.erase(std::unique(row.sorted.begin(), row.sorted.end()), row.sorted.end());
  size_t lo = 0, hi = row.sorted.size() - 1;  // kept_mass(sorted[lo]) >= target holds: sorted[0] == tau
  while (lo < hi) {
    const size_t mid = lo + (hi - lo + 1) / 2;
    if (kept_mass(row, n, row.sorted[mid]) >= target)
      lo = mid;
    else
      hi = mid - 1;
  }
  return row.sorted[lo];
}

void fill_keys(const float* x, int64_t n, float inv_t, RowTerms& row) {
  row.key.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) row.key[static_cast<size_t>(k)] = choice_key(x[k] * inv_t);
}

// The inverse CDF over the kept ids in lane order (runtime/token_choice.h, "Draw").
int32_t draw(const float* x, float inv_t, RowTerms& row, int64_t n, uint32_t tau, double u) {
  double lanes[kLanes];
  lane_sums(row, n, tau, lanes);
  const token_choice::LaneChoice c = token_choice::choose_lane(lanes, u);
  if (c.lane < 0) {  // C == 0
    if (row.key.empty()) fill_keys(x, n, inv_t, row);
    return largest_key_id(row.key.data(), n);
  }
  double running = c.before;
  int64_t last = -1;
  for (int64_t k = c.lane; k < n; k += kLanes) {
    if ((!row.key.empty() && row.key[k] < tau) || !(row.weight[k] > 0.0f)) continue;
    running += static_cast<double>(row.weight[k]);
    last = k;
    if (c.target < running) break;
  }
  return static_cast<int32_t>(last);
}

int32_t greedy(const float* x, int64_t n, std::vector<uint32_t>& keys) {
  keys.resize(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) keys[static_cast<size_t>(k)] = choice_key(x[k]);
  return largest_key_id(keys.data(), n);
}

int32_t choose_row(const float* x, double u, const TokenChoiceArgs& a, RowTerms& row) {
  const int64_t n = a.choice_ids;
  if (a.temperature <= 0.0f) return greedy(x, n, row.key);
  const float inv_t = 1.0f / a.temperature;
  float max_x = -INFINITY;
  for (int64_t k = 0; k < n; ++k) max_x = std::max(max_x, x[k]);  // NaN skipped, as fmaxf on the GPU
  const float m = max_x * inv_t;  // inv_t > 0: the max of the products is the product of the max
  // choice_weight, in a loop that vectorises: cpu_math::exp_any has cuda::exp_any's bits.
  row.weight.resize(static_cast<size_t>(n));
  float* w = row.weight.data();
  for (int64_t k = 0; k < n; ++k) {
    const float d = x[k] * inv_t - m;
    const float e = cpu_math::exp_any(d);
    w[k] = d == d ? e : 0.0f;
  }
  const bool top_k = a.top_k > 0 && a.top_k < n, top_p = a.top_p < 1.0f;
  row.key.clear();
  if (top_k || top_p) fill_keys(x, n, inv_t, row);
  uint32_t tau = 0;
  if (top_k) tau = top_k_threshold(row, n, a.top_k);
  if (top_p) tau = top_p_threshold(row, n, tau, a.top_p);
  return draw(x, inv_t, row, n, tau, u);
}

}  // namespace

void CpuBackend::choose_tokens(const float* logits, const double* uniforms, int32_t* ids, int64_t rows,
                               int64_t vocab, const TokenChoiceArgs& args) {
  GTPO_PRIMITIVE("choose_tokens");
  parallel_for(rows, grain_for(8 * args.choice_ids), [&](int64_t r0, int64_t r1) {
    RowTerms row;
    for (int64_t r = r0; r < r1; ++r)
      ids[r] = choose_row(logits + r * vocab, args.temperature > 0.0f ? uniforms[r] : 0.0, args, row);
  });
}

}  // namespace gtpo
