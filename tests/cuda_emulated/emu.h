// Host emulation of the CUDA features the attention kernels use: one OS thread, 128 ucontext fibers per
// block; __syncthreads and warp ops (__shfl_xor_sync, __syncwarp) are scheduling points. Detects deadlocks,
// barriers not reached by all threads, warp ops with missing lanes; thread order per pass: forward, reverse,
// or random, so races between phases change results (compared bitwise across orders).
#pragma once
#include <ucontext.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>
#include <algorithm>
#include <limits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct EmuDim3 { unsigned x = 0, y = 0, z = 0; };
inline EmuDim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {
constexpr int N = 128;
enum State { RUN, BAR, WARP, DONE };
struct Thr {
  ucontext_t ctx;
  State state = RUN;
  int kind = 0;  // 1 shfl, 2 syncwarp
  float val = 0, snap = 0;
  int off = 0;
};
inline Thr thr[N];
inline std::vector<char> stacks;
inline ucontext_t sched;
inline int cur = 0;
inline std::function<void()> body;
inline std::vector<float> smem;
inline int order_mode = 0;
inline std::mt19937 rng(1);
inline long long switches = 0;

[[noreturn]] inline void die(const char* what) {
  fprintf(stderr, "EMU ERROR: %s (block %u)\n", what, blockIdx.x);
  for (int t = 0; t < N; ++t) fprintf(stderr, "%d", thr[t].state);
  fprintf(stderr, "\n");
  std::abort();
}
inline void yield() {
  ++switches;
  swapcontext(&thr[cur].ctx, &sched);
}
inline void entry() {
  body();
  thr[cur].state = DONE;
}
inline void run_block() {
  const size_t ss = 256 * 1024;
  if (stacks.empty()) stacks.resize(ss * N);
  for (int t = 0; t < N; ++t) {
    thr[t].state = RUN;
    getcontext(&thr[t].ctx);
    thr[t].ctx.uc_stack.ss_sp = stacks.data() + ss * t;
    thr[t].ctx.uc_stack.ss_size = ss;
    thr[t].ctx.uc_link = &sched;
    makecontext(&thr[t].ctx, entry, 0);
  }
  std::vector<int> order(N);
  for (;;) {
    for (int t = 0; t < N; ++t) order[t] = order_mode == 1 ? N - 1 - t : t;
    if (order_mode == 2) std::shuffle(order.begin(), order.end(), rng);
    for (int t : order) {
      if (thr[t].state != RUN) continue;
      cur = t;
      threadIdx.x = t;
      swapcontext(&sched, &thr[t].ctx);
    }
    bool all_done = true, any_done = false;
    for (int t = 0; t < N; ++t) { all_done &= thr[t].state == DONE; any_done |= thr[t].state == DONE; }
    if (all_done) return;
    bool released = false;
    for (int w = 0; w < N / 32; ++w) {
      int nw = 0, nd = 0;
      for (int l = 0; l < 32; ++l) { nw += thr[w * 32 + l].state == WARP; nd += thr[w * 32 + l].state == DONE; }
      if (nw == 32) {
        for (int l = 0; l < 32; ++l) {
          Thr& x = thr[w * 32 + l];
          if (x.kind != thr[w * 32].kind || x.off != thr[w * 32].off) die("warp op mismatch");
          x.snap = x.val;
        }
        for (int l = 0; l < 32; ++l) thr[w * 32 + l].state = RUN;
        released = true;
      } else if (nw > 0 && nd > 0) {
        die("warp op with exited lanes");
      }
    }
    if (released) continue;
    bool all_bar = true;
    for (int t = 0; t < N; ++t) all_bar &= thr[t].state == BAR || thr[t].state == DONE;
    if (all_bar) {
      if (any_done) die("__syncthreads not reached by exited threads");
      for (int t = 0; t < N; ++t) thr[t].state = RUN;
      continue;
    }
    die("deadlock");
  }
}
}  // namespace emu

inline void __syncthreads() { emu::thr[emu::cur].state = emu::BAR; emu::yield(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) emu::die("partial syncwarp");
  auto& t = emu::thr[emu::cur];
  t.kind = 2; t.off = 0; t.state = emu::WARP; emu::yield();
}
inline float __shfl_xor_sync(unsigned mask, float v, int o) {
  if (mask != 0xffffffffu) emu::die("partial shfl");
  const int me = emu::cur;
  auto& t = emu::thr[me];
  t.kind = 1; t.off = o; t.val = v; t.state = emu::WARP; emu::yield();
  const int partner = (me & ~31) | ((me & 31) ^ o);
  return emu::thr[partner].snap;
}

namespace gtpo::cuda::attn { inline float* dynamic_smem() { return emu::smem.data(); } }

#include "runtime/cuda/cuda_attention_forward.cuh"
#include "runtime/cuda/cuda_attention_backward.cuh"

struct EmuExec {
  std::vector<std::vector<float>> scratches;
  size_t max_smem = 0;
  long long launches = 0;
  void* scratch(size_t bytes) {
    scratches.emplace_back(std::max<size_t>(bytes / 4, 0), std::numeric_limits<float>::quiet_NaN());
    return scratches.back().data();
  }
  template <typename... P, typename... A>
  void launch(void (*kernel)(P...), int64_t blocks, size_t smem_bytes, A&&... args) {
    if (blocks <= 0) return;
    ++launches;
    max_smem = std::max(max_smem, smem_bytes);
    if (smem_bytes > 99 * 1024) emu::die("smem above 99 KB");
    gridDim.x = unsigned(blocks);
    blockDim.x = 128;
    emu::body = [&]() { kernel(args...); };
    for (int64_t b = 0; b < blocks; ++b) {
      blockIdx.x = unsigned(b);
      emu::smem.assign(smem_bytes / 4, std::numeric_limits<float>::quiet_NaN());
      emu::run_block();
    }
  }
};
