// The sampler's token choice on the device (the definition: runtime/token_choice.h): one block of
// kTokenChoiceLanes threads per row, thread t being lane t. Device code only, no CUDA runtime API:
// tests/cuda_emulated runs this very kernel on a host emulation of thread blocks against the CPU backend.
//
// The thresholds are found by binary search over the 32-bit keys, each probe one pass over the row and one
// block reduction (counts for top-k, the kept mass for top-p): at most 32 passes each, every thread taking
// the same branch. The draw's scan over the lane sums and the walk within the chosen lane run on thread 0,
// in the order the definition fixes.
#pragma once
#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/token_choice.h"

namespace gtpo::cuda {

namespace {

constexpr int kChoiceThreads = token_choice::kTokenChoiceLanes;

// The largest of one unsigned value per thread, to every thread (max is exact: no order to fix).
__device__ __forceinline__ uint32_t block_max_u32(uint32_t v, int* shared) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) {
    const uint32_t o = static_cast<uint32_t>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), offset));
    v = o > v ? o : v;
  }
  __syncthreads();
  if (threadIdx.x % kWarp == 0) shared[threadIdx.x / kWarp] = static_cast<int>(v);
  __syncthreads();
  uint32_t m = 0;
  for (unsigned w = 0; w < blockDim.x / kWarp; ++w) {
    const uint32_t s = static_cast<uint32_t>(shared[w]);
    m = s > m ? s : m;
  }
  return m;
}

// The smallest of one non-negative int per thread, to every thread.
__device__ __forceinline__ int block_min_int(int v, int* shared) {
  for (int offset = kWarp / 2; offset > 0; offset >>= 1) {
    const int o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o < v ? o : v;
  }
  __syncthreads();
  if (threadIdx.x % kWarp == 0) shared[threadIdx.x / kWarp] = v;
  __syncthreads();
  int m = shared[0];
  for (unsigned w = 1; w < blockDim.x / kWarp; ++w) m = shared[w] < m ? shared[w] : m;
  return m;
}

// One row seen by the block: z_k = x_k * inv_t (inv_t 1 for greedy, which ranks x itself).
struct ChoiceRow {
  const float* x;
  int64_t n;
  float inv_t, m;  // m = max z (unused by greedy)
  __device__ float z(int64_t k) const { return ieee::mul(x[k], inv_t); }
};

// The id of the largest key, lowest on ties, to every thread.
__device__ int32_t largest_key_id(const ChoiceRow& row, int* shared_i) {
  uint32_t best = 0;
  for (int64_t k = threadIdx.x; k < row.n; k += blockDim.x) {
    const uint32_t key = token_choice::choice_key(row.z(k));
    best = key > best ? key : best;
  }
  best = block_max_u32(best, shared_i);
  int first = 0x7fffffff;
  for (int64_t k = threadIdx.x; k < row.n && first == 0x7fffffff; k += blockDim.x)
    if (token_choice::choice_key(row.z(k)) == best) first = static_cast<int>(k);
  return block_min_int(first, shared_i);
}

// This thread's lane sum of the weights with key >= tau, in its ids' order.
__device__ double lane_sum(const ChoiceRow& row, uint32_t tau) {
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < row.n; k += blockDim.x) {
    const float z = row.z(k);
    if (token_choice::choice_key(z) >= tau)
      s = ieee::add(s, static_cast<double>(token_choice::choice_weight(z, row.m)));
  }
  return s;
}

// The largest tau in [lo, hi] with keeps(tau), given keeps(lo) and keeps monotone (true up to the answer).
template <typename Keeps>
__device__ uint32_t largest_threshold(uint32_t lo, uint32_t hi, Keeps keeps) {
  while (lo < hi) {
    const uint32_t mid = static_cast<uint32_t>(lo + (static_cast<uint64_t>(hi) - lo + 1) / 2);
    if (keeps(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// tau of runtime/token_choice.h: top-k, then top-p within what top-k kept.
__device__ uint32_t kept_threshold(const ChoiceRow& row, const TokenChoiceArgs& a, double* shared_d) {
  const uint32_t max_key = token_choice::choice_key(row.m);
  uint32_t tau = 0;
  if (a.top_k > 0 && a.top_k < row.n) {
    tau = largest_threshold(0u, max_key, [&](uint32_t t) {
      double count = 0.0;
      for (int64_t k = threadIdx.x; k < row.n; k += blockDim.x)
        count += token_choice::choice_key(row.z(k)) >= t;
      return block_sum(count, shared_d) >= static_cast<double>(a.top_k);
    });
  }
  if (a.top_p < 1.0f) {
    const double total = block_sum(lane_sum(row, tau), shared_d);
    if (total > 0.0) {
      const double target = ieee::mul(static_cast<double>(a.top_p), total);
      tau = largest_threshold(tau, max_key,
                              [&](uint32_t t) { return block_sum(lane_sum(row, t), shared_d) >= target; });
    }
  }
  return tau;
}

// Thread 0's part of the draw: the lane sums' scan, then the walk within the chosen lane. -1: C == 0.
__device__ int32_t draw_on_thread0(const ChoiceRow& row, uint32_t tau, double u, const double* lanes) {
  const token_choice::LaneChoice c = token_choice::choose_lane(lanes, u);
  if (c.lane < 0) return -1;
  double running = c.before;
  int64_t last = -1;
  for (int64_t k = c.lane; k < row.n; k += kChoiceThreads) {
    const float z = row.z(k);
    const float w = token_choice::choice_weight(z, row.m);
    if (token_choice::choice_key(z) < tau || !(w > 0.0f)) continue;
    running = ieee::add(running, static_cast<double>(w));
    last = k;
    if (c.target < running) break;
  }
  return static_cast<int32_t>(last);
}

// Launch with kChoiceThreads threads per block; rows loop over the grid.
__global__ void __launch_bounds__(kChoiceThreads)
    choose_tokens_kernel(const float* logits, const double* uniforms, int32_t* ids, int64_t rows,
                         int64_t vocab, TokenChoiceArgs a) {
  GTPO_SHARED_ARRAY(float, shared_f, kWarp);
  GTPO_SHARED_ARRAY(double, shared_d, kWarp);
  GTPO_SHARED_ARRAY(int, shared_i, kWarp);
  GTPO_SHARED_ARRAY(double, lanes, kChoiceThreads);
  GTPO_SHARED_ARRAY(int32_t, chosen, 1);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    ChoiceRow row{logits + r * vocab, a.choice_ids, 1.0f, 0.0f};
    if (a.temperature <= 0.0f) {
      const int32_t id = largest_key_id(row, shared_i);
      if (threadIdx.x == 0) ids[r] = id;
      continue;
    }
    row.inv_t = ieee::div(1.0f, a.temperature);
    float mx = -INFINITY;
    for (int64_t k = threadIdx.x; k < row.n; k += blockDim.x) mx = fmaxf(mx, row.x[k]);
    row.m = ieee::mul(block_max(mx, shared_f), row.inv_t);  // inv_t > 0: the max of z
    const uint32_t tau = kept_threshold(row, a, shared_d);
    lanes[threadIdx.x] = lane_sum(row, tau);
    __syncthreads();
    if (threadIdx.x == 0) chosen[0] = draw_on_thread0(row, tau, uniforms[r], lanes);
    __syncthreads();
    const int32_t id =
        chosen[0] >= 0 ? chosen[0] : largest_key_id(row, shared_i);  // uniform across the block
    if (threadIdx.x == 0) ids[r] = id;
    __syncthreads();  // lanes and chosen are rewritten for the next row
  }
}

}  // namespace

}  // namespace gtpo::cuda
