// Shared pieces of the CUDA attention kernels: launch constants, tile sizes and shared-memory footprints, the
// head-dim dispatch, and the device helpers the tiled kernels are built from (tile loads, tile products,
// fixed-order row reductions). The design is described in cuda_attention.cu.
//
// Like the forward and backward headers, this is device code only, with no CUDA runtime API: a host build that supplies
// threadIdx, __syncthreads, __syncwarp, __shfl_xor_sync and dynamic_smem() runs the very same kernels and
// launch plans, which is how they were checked on a machine without a GPU.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "runtime/cuda/cuda_attention_index.cuh"

namespace gtpo::cuda::attn {

constexpr int kThreads = 128;
// Stated in __launch_bounds__: 3 blocks of 128 threads is what shared memory allows anyway (see Tiles) and caps
// registers at 168, none spilled; without it ptxas for sm_80 picked 64-72 registers for some kernels and spilled.
constexpr int kMinBlocksPerSm = 3;
constexpr int kWarpLanes = 32;
constexpr int kWarpsPerBlock = kThreads / kWarpLanes;
constexpr int kGroupLanes = 8;                      // threads sharing one score row
constexpr int kRowGroups = kThreads / kGroupLanes;  // 16 row groups per block
constexpr int kMaxHeadDim = 256;
constexpr int kDecodeMaxQueries = 16;      // q_len at or below this takes the decode path
constexpr int64_t kDecodeSplitKeys = 512;  // keys per decode block; more keys, more blocks (split-K)
// Keys a decode warp scores before one online-softmax update (their loads overlap); 2 for the widest heads,
// whose 8 elements per lane and key would otherwise spill.
template <int kMaxD>
constexpr int decode_unroll() {
  return kMaxD > 128 ? 2 : 4;
}
constexpr float kNegInf = -INFINITY;

// Tile sizes per head-dim bucket: BQ queries x BK keys for the forward (fq, fk) and the backward (bq, bk).
// Dynamic shared memory stays at or under 76,672 bytes, so any GPU from sm_80 on (99 KB opt-in on sm_86/89)
// runs every kernel and an H100/H200 SM (228 KB, 1 KB reserved per block) holds 3 blocks = 12 warps, which the
// register budget (<= 168 per thread, kMinBlocksPerSm) matches; accumulators stay at <= 64 floats per thread.
template <int kMaxD>
struct Tiles;
template <>
struct Tiles<32> {
  static constexpr int fq = 64, fk = 32, bq = 32, bk = 64;
};
template <>
struct Tiles<64> {
  static constexpr int fq = 64, fk = 64, bq = 32, bk = 64;
};
template <>
struct Tiles<128> {
  static constexpr int fq = 64, fk = 32, bq = 32, bk = 32;
};
template <>
struct Tiles<256> {
  static constexpr int fq = 32, fk = 16, bq = 16, bk = 16;
};

// Shared-memory footprints in floats (the kernels carve their buffers in this order).
template <int kMaxD, int BQ, int BK>
constexpr int64_t fwd_smem_floats() {
  return int64_t(BQ) * (kMaxD + 1) + 2 * int64_t(BK) * (kMaxD + 1) + int64_t(BQ) * (BK + 8) + BK;
}
template <int kMaxD, int BQ, int BK>
constexpr int64_t bwd_kv_smem_floats() {
  return 2 * int64_t(BK) * (kMaxD + 1) + 2 * int64_t(BQ) * (kMaxD + 1) + 2 * int64_t(BQ) * (BK + 8) + 2 * BQ + BK;
}
template <int kMaxD, int BQ, int BK>
constexpr int64_t bwd_q_smem_floats() {
  return 2 * int64_t(BQ) * (kMaxD + 1) + 2 * int64_t(BK) * (kMaxD + 1) + int64_t(BQ) * (BK + 8) + 2 * BQ + BK;
}
template <int kMaxD>
constexpr int64_t decode_smem_floats() {
  return int64_t(kWarpsPerBlock) * (kMaxD + 2);
}

GTPO_ATTN_HD int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// Decode splits depend on kv_len only, so the combine order is a function of the problem size.
inline int64_t decode_splits(int64_t kv_len) {
  return kv_len <= kDecodeSplitKeys ? 1 : ceil_div(kv_len, kDecodeSplitKeys);
}

// ---- head-dim dispatch and the executor of launch plans ---------------------------------------------
// The launch plans (forward_plan, backward_plan) run on an Exec that provides
//   void* scratch(size_t bytes): device scratch, valid until the next call;
//   launch(kernel, int64_t blocks, size_t smem_bytes, args...): kThreads threads per block, none for 0 blocks.
// cuda_attention.cu's Exec queues on the backend's stream; a host emulator can run the same plans.

template <int D, bool E>
struct HeadDim {
  static constexpr int kMaxD = D;
  static constexpr bool kExact = E;
};

// Calls f(HeadDim<bucket, exact>{}): exact kernels for the common 64 and 128, generic buckets otherwise.
// Callers have checked dim <= kMaxHeadDim.
template <class F>
void with_head_dim(int64_t dim, F&& f) {
  if (dim == 64) f(HeadDim<64, true>{});
  else if (dim == 128) f(HeadDim<128, true>{});
  else if (dim <= 32) f(HeadDim<32, false>{});
  else if (dim <= 64) f(HeadDim<64, false>{});
  else if (dim <= 128) f(HeadDim<128, false>{});
  else f(HeadDim<256, false>{});
}

// ---- device helpers -----------------------------------------------------------------------------

#if defined(__CUDACC__)
__device__ __forceinline__ float* dynamic_smem() {
  extern __shared__ float attention_dynamic_smem[];
  return attention_dynamic_smem;
}
#endif

__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// Max and sum over the 8 lanes of a row group, and sum over a warp. Butterfly (xor) trees: every lane ends
// with the same bits, because each level adds the same two values on both sides (addition commutes exactly).
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
  for (int o = 1; o < kGroupLanes; o <<= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
  for (int o = 1; o < kGroupLanes; o <<= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float lanes_sum(float v) {
#pragma unroll
  for (int o = kWarpLanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// dst[r][d] (stride kMaxD + 1) = scale * src[r * row_stride + d] for r < rows, d < dim; zero elsewhere in the
// kRows x kMaxD tile. Consecutive threads take consecutive d: coalesced reads, conflict-free writes.
template <int kMaxD, int kRows>
__device__ __forceinline__ void load_rows(float* dst, const float* __restrict__ src, int64_t row_stride, int rows,
                                          int dim, float scale) {
  constexpr int SD = kMaxD + 1;
  for (int e = threadIdx.x; e < kRows * kMaxD; e += kThreads) {
    const int r = e / kMaxD, d = e % kMaxD;
    dst[r * SD + d] = (r < rows && d < dim) ? scale * src[r * row_stride + d] : 0.0f;
  }
}

// kmask[c] = 1 when key j0 + c exists (c < nk) and is not masked out, else 0.
template <int BK>
__device__ __forceinline__ void load_key_mask(float* kmask, const Geom& g, int64_t b, int64_t j0, int nk) {
  for (int c = threadIdx.x; c < BK; c += kThreads) kmask[c] = (c < nk && key_ok(g, b, j0 + c)) ? 1.0f : 0.0f;
}

// s[i][j] = sum over d < dim, in d order, of A[tr + 16 i][d] * B[tc + 8 j][d] (both stride kMaxD + 1).
template <int kMaxD, bool kExact, int RM, int KN>
__device__ __forceinline__ void tile_dots(const float* A, const float* B, int dim, int tr, int tc,
                                          float (&s)[RM][KN]) {
  constexpr int SD = kMaxD + 1;
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < KN; ++j) s[i][j] = 0.0f;
  const int n = kExact ? kMaxD : dim;
#pragma unroll 4
  for (int d = 0; d < n; ++d) {
    float a[RM], bv[KN];
#pragma unroll
    for (int i = 0; i < RM; ++i) a[i] = A[(tr + kRowGroups * i) * SD + d];
#pragma unroll
    for (int j = 0; j < KN; ++j) bv[j] = B[(tc + kGroupLanes * j) * SD + d];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < KN; ++j) s[i][j] = fmaf(a[i], bv[j], s[i][j]);
  }
}

}  // namespace gtpo::cuda::attn
