// Fused causal attention on the GPU: forward (tiled and decode) and the deterministic backward.
// Semantics: AttentionArgs and attention_forward/backward in runtime/backend.h; index and visibility rules:
// cuda_attention_index.cuh. Kernels and their launch plans: cuda_attention_forward.cuh and
// cuda_attention_backward.cuh (shared pieces: cuda_attention_tiles.cuh). This file runs those plans on the
// backend's stream with its scratch buffer, and opts kernels into more than 48 KB of shared memory. The kernels
// live in headers free of the CUDA runtime API so that a host emulation of threads, barriers and shuffles can
// run the same code; that is how they were checked on a machine without a GPU.
//
// Precision and determinism. Everything is fp32, also under MatmulPrecision::tf32/bf16 (attention is a small
// share of these models' FLOPs, and fp32 keeps the GPU close to the CPU reference). No kernel uses atomics and
// every sum runs in an order fixed by the problem size alone (fixed d loops, fixed key order, fixed shuffle
// trees, fixed split-combine order), so results repeat bit for bit on the same GPU.
//
// Kernels, all 128 threads (4 warps) per block:
//   fwd_tiled   q_len > 16: one block per (batch, q head, block of BQ queries), K/V tiles of BK keys staged in
//               shared memory, online softmax in fp32 (running max m, running sum l, rescaled accumulator).
//               Training and prefill.
//   fwd_decode  q_len <= 16 (sampling): a tiled block would leave most rows empty and the grid would have only
//               batch * q_heads blocks. Instead one block per (query row, split of 512 keys), one warp per
//               contiguous quarter of the split, lanes over head_dim; warps merge in warp order, and with more
//               than one split the partials (m, l, acc) go to scratch and decode_combine merges them in split
//               order. Splits depend on kv_len only.
//   bwd_dot     D_i = gout_i . out_i, one warp per query row, into scratch laid out like lse.
//   bwd_kv      one block per (batch, kv head, block of BK keys): P = exp(s - lse) recomputed, dS = P (dP - D),
//               dV += P^T gout and dK += dS^T (scale q), summed over the group's q heads (outer) and query
//               blocks in index order; each thread owns fixed (key, dim) elements.
//   bwd_q       one block per (batch, q head, block of BQ queries): dQ = scale * dS K over key tiles in order.
// The path depends on the shape only and no row's arithmetic depends on kv_batch_stride, so attention_cached
// over a strided cache equals attention over the dense prefix bit for bit, as on the CPU.
// No [T, T] buffer exists; the price of a deterministic backward without atomics is that bwd_q recomputes the
// score and dP tiles that bwd_kv also computed.
//
// Tiled thread layout: thread t is (row group tr = t / 8, lane in group tc = t % 8). In a tile product
// S = A B^T it owns rows tr + 16 i and columns tc + 8 j, so a row's 8 threads are adjacent lanes of one warp:
// row max and sum are 3 xor shuffles, and a row of P written to shared memory is read back only by its own warp
// (__syncwarp). bwd_kv's [keys, head_dim] accumulators use the same split: keys tk + 16 i, dims td + 8 j.
// Bank use: row tiles have stride kMaxD + 1 (1 mod 32), so the 4 rows or 8 columns a warp reads at one d fall
// in distinct banks; score tiles have stride BK + 8 (8 or 24 mod 32), so the 4 x 8 (row, key) pairs a warp
// writes hit 32 distinct banks and the 4 consecutive keys it reads per row are conflict free. Tails (q_len,
// kv_len, head_dim not multiples of the tile) are zero-filled in shared memory and masked as invisible, so the
// inner loops have block-uniform trip counts and no bounds checks. Head dims 64 and 128 get kernels with the
// dim fixed at compile time; others run the 32/64/128/256 bucket above them with a runtime dim.
#include <climits>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/cuda/cuda_attention_backward.cuh"
#include "runtime/cuda/cuda_attention_forward.cuh"
#include "runtime/cuda/cuda_common.cuh"
#include "runtime/primitive_profile.h"

namespace gtpo::cuda {

namespace {

// Raises a kernel's dynamic shared-memory limit once (the default is 48 KB). The attribute belongs to the
// kernel, not the stream, so a process-wide record suffices.
void allow_dynamic_smem(const void* kernel, size_t bytes, int device) {
  static std::mutex mutex;
  static std::vector<std::pair<const void*, size_t>> raised;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto& [fn, limit] : raised)
    if (fn == kernel && limit >= bytes) return;
  int optin = 0;
  GTPO_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  GTPO_CHECK(bytes <= static_cast<size_t>(optin), "cuda attention: a kernel needs ", bytes,
             " bytes of shared memory per block but GPU ", device, " allows ", optin);
  GTPO_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  // These kernels stage everything they reuse in shared memory: prefer it over L1 so that 3 blocks fit per SM.
  GTPO_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  raised.emplace_back(kernel, bytes);
}

// The executor the launch plans run on: every kernel on the backend's stream, no host synchronisation.
struct StreamExec {
  CudaBackend& be;

  void* scratch(size_t bytes) { return be.scratch(bytes); }

  template <typename... Params, typename... Args>
  void launch(void (*kernel)(Params...), int64_t blocks, size_t smem_bytes, Args&&... args) {
    if (blocks <= 0) return;
    GTPO_CHECK(blocks <= INT_MAX, "cuda attention: ", blocks, " thread blocks exceed the grid limit");
    if (smem_bytes > 48 * 1024)
      allow_dynamic_smem(reinterpret_cast<const void*>(kernel), smem_bytes, be.device_index());
    GTPO_LAUNCH(kernel, static_cast<unsigned>(blocks), attn::kThreads, smem_bytes, stream_of(be),
                std::forward<Args>(args)...);
  }
};

attn::Geom checked_geom(const AttentionArgs& args) {
  GTPO_CHECK(args.head_dim <= attn::kMaxHeadDim, "cuda attention: head_dim ", args.head_dim,
             " is above the largest supported (", attn::kMaxHeadDim, ")");
  return attn::make_geom(args);
}

}  // namespace

void CudaBackend::attention_forward(const AttentionArgs& args, const float* q, const float* k, const float* v,
                                    float* out, float* lse) {
  GTPO_PRIMITIVE("attention_forward");
  const attn::Geom g = checked_geom(args);
  StreamExec ex{*this};
  attn::forward_plan(ex, g, q, k, v, out, lse);
}

void CudaBackend::attention_backward(const AttentionArgs& args, const float* q, const float* k, const float* v,
                                     const float* out, const float* lse, const float* gout, float* gq, float* gk,
                                     float* gv) {
  GTPO_PRIMITIVE("attention_backward");
  GTPO_CHECK(args.kv_rows == nullptr, "cuda attention: kv_rows is a forward-only option");
  const attn::Geom g = checked_geom(args);
  StreamExec ex{*this};
  attn::backward_plan(ex, g, q, k, v, out, lse, gout, gq, gk, gv);
}

}  // namespace gtpo::cuda
