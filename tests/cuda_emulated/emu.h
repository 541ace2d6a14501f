// Host emulation of the CUDA features the kernel headers (runtime/cuda/*.cuh) use: one OS thread, one
// ucontext fiber per CUDA thread (blocks of 32..1024 threads, grids in x and y, blocks run one after
// another);
// __syncthreads and warp shuffles (float or double) are scheduling points. Detects deadlocks, barriers not
// reached by all threads, warp ops with missing or disagreeing lanes, blocks above 1024 threads or not a
// whole number of warps. Thread order per pass: forward, reverse, random, or warp by warp with each warp run
// up to its next barrier (blocks forward, reverse or random), so races between phases or between blocks
// change results, which the tests compare bitwise across orders. Shared memory, static (GTPO_SHARED_ARRAY)
// and dynamic (GTPO_DYNAMIC_SHARED), is per block and starts as all-ones bytes (NaN as float and double, -1
// as an integer), so a read before a write shows.
#pragma once
#include <math.h>  // ::isnan and friends in the global namespace, as CUDA's device math has them
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct EmuDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline EmuDim3 threadIdx, blockIdx, blockDim, gridDim;

namespace emu {
constexpr int kMaxThreads = 1024;
constexpr size_t kStackBytes = 256 * 1024;
enum State { RUN, BAR, WARP, DONE };
struct Thr {
  ucontext_t ctx;
  State state = RUN;
  int kind = 0;  // 1 shfl_xor, 2 syncwarp
  uint64_t val = 0, snap = 0;
  int off = 0;
};
inline Thr thr[kMaxThreads];
inline int nthreads = 128;
inline char* stacks = nullptr;
inline ucontext_t sched;
inline int cur = 0;
inline std::function<void()> body;
inline std::vector<uint64_t> smem;  // dynamic shared memory of the current block
inline long long block_epoch = 0;   // which block is running: static shared arrays are re-made per block
inline int order_mode = 0;          // threads (and blocks): 0 forward, 1 reverse, 2 random, 3 warps run ahead
constexpr int kOrders = 4;
inline std::mt19937 rng(1);
inline long long switches = 0;

[[noreturn]] inline void die(const char* what) {
  fprintf(stderr, "EMU ERROR: %s (block %u,%u)\n", what, blockIdx.x, blockIdx.y);
  for (int t = 0; t < nthreads; ++t) fprintf(stderr, "%d", thr[t].state);
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
// Order 3: one warp at a time (in random order), each run up to its next __syncthreads before the next warp
// starts, so warps are as far apart as the barriers allow: a shared-memory race between phases of a block
// that lacks a barrier shows here even when the round-robin orders hide it.
inline void release_barrier_or_die(bool* all_done) {
  bool all_bar = true, any_done = false, done = true;
  for (int t = 0; t < nthreads; ++t) {
    all_bar &= thr[t].state == BAR || thr[t].state == DONE;
    any_done |= thr[t].state == DONE;
    done &= thr[t].state == DONE;
  }
  *all_done = done;
  if (done) return;
  if (!all_bar) die("deadlock");
  if (any_done) die("__syncthreads not reached by exited threads");
  for (int t = 0; t < nthreads; ++t) thr[t].state = RUN;
}
inline void run_block_warp_ahead() {
  std::vector<int> warps(nthreads / 32);
  for (int w = 0; w < int(warps.size()); ++w) warps[w] = w;
  for (;;) {
    std::shuffle(warps.begin(), warps.end(), rng);
    for (int w : warps) {
      for (;;) {
        for (int l = 0; l < 32; ++l) {
          const int t = w * 32 + l;
          if (thr[t].state != RUN) continue;
          cur = t;
          threadIdx.x = t;
          swapcontext(&sched, &thr[t].ctx);
        }
        int nw = 0;
        for (int l = 0; l < 32; ++l) nw += thr[w * 32 + l].state == WARP;
        if (nw == 0) break;  // the warp is at a barrier or done
        if (nw != 32) die("warp op with lanes at a barrier or exited");
        for (int l = 0; l < 32; ++l) {
          Thr& x = thr[w * 32 + l];
          if (x.kind != thr[w * 32].kind || x.off != thr[w * 32].off) die("warp op mismatch");
          x.snap = x.val;
        }
        for (int l = 0; l < 32; ++l) thr[w * 32 + l].state = RUN;
      }
    }
    bool all_done = false;
    release_barrier_or_die(&all_done);
    if (all_done) return;
  }
}

inline void run_block() {
  if (!stacks) {
    void* p = mmap(nullptr, kStackBytes * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) die("mmap of the fiber stacks");
    stacks = static_cast<char*>(p);
  }
  const int N = nthreads;
  for (int t = 0; t < N; ++t) {
    thr[t].state = RUN;
    getcontext(&thr[t].ctx);
    thr[t].ctx.uc_stack.ss_sp = stacks + kStackBytes * t;
    thr[t].ctx.uc_stack.ss_size = kStackBytes;
    thr[t].ctx.uc_link = &sched;
    makecontext(&thr[t].ctx, entry, 0);
  }
  std::vector<int> order(N);
  if (order_mode == 3) return run_block_warp_ahead();
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
    for (int t = 0; t < N; ++t) {
      all_done &= thr[t].state == DONE;
      any_done |= thr[t].state == DONE;
    }
    if (all_done) return;
    bool released = false;
    for (int w = 0; w < N / 32; ++w) {
      int nw = 0, nd = 0;
      for (int l = 0; l < 32; ++l) {
        nw += thr[w * 32 + l].state == WARP;
        nd += thr[w * 32 + l].state == DONE;
      }
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

// Storage of one __shared__ array: made afresh (and poisoned) by the first thread of each block to declare
// it.
struct SharedSlot {
  std::vector<uint64_t> mem;
  long long epoch = -1;
  template <typename T>
  T* get(size_t count) {
    if (epoch != block_epoch) {
      mem.assign((count * sizeof(T) + 7) / 8, ~uint64_t(0));
      epoch = block_epoch;
    }
    return reinterpret_cast<T*>(mem.data());
  }
};

template <typename T>
inline T shfl_xor(unsigned mask, T v, int o) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle of a register-sized value");
  if (mask != 0xffffffffu) die("partial shfl");
  const int me = cur;
  auto& t = thr[me];
  t.kind = 1;
  t.off = o;
  t.val = 0;
  std::memcpy(&t.val, &v, sizeof(T));
  t.state = WARP;
  yield();
  const int partner = (me & ~31) | ((me & 31) ^ o);
  T r;
  std::memcpy(&r, &thr[partner].snap, sizeof(T));
  return r;
}

// Runs kernel over a grid_x x grid_y grid of `threads`-thread blocks, in the order order_mode says. Returns
// false (launching nothing) for an empty grid, which CUDA rejects as a launch error.
struct Launch {
  unsigned grid_x = 1, grid_y = 1;
  int threads = 128;
  size_t smem_bytes = 0;
  size_t max_smem = 48 * 1024;  // more needs cudaFuncSetAttribute, which only the attention launches do
};
template <typename... P, typename... A>
void launch(void (*kernel)(P...), const Launch& l, A&&... args) {
  if (l.grid_x == 0 || l.grid_y == 0) die("empty grid (a CUDA launch error)");
  if (l.grid_y > 65535 || l.grid_x > 2147483647u) die("grid above the CUDA limits");
  if (l.threads < 32 || l.threads > kMaxThreads || l.threads % 32)
    die("block size not 32..1024 in whole warps");
  if (l.smem_bytes > l.max_smem) die("dynamic shared memory above the launch's limit");
  gridDim.x = l.grid_x;
  gridDim.y = l.grid_y;
  gridDim.z = 1;
  blockDim.x = unsigned(l.threads);
  blockDim.y = blockDim.z = 1;
  nthreads = l.threads;
  body = [&]() { kernel(args...); };
  const int64_t blocks = int64_t(l.grid_x) * l.grid_y;
  std::vector<int64_t> order(blocks);
  for (int64_t b = 0; b < blocks; ++b) order[b] = order_mode == 1 ? blocks - 1 - b : b;
  if (order_mode >= 2) std::shuffle(order.begin(), order.end(), rng);
  for (int64_t b : order) {
    blockIdx.x = unsigned(b % l.grid_x);
    blockIdx.y = unsigned(b / l.grid_x);
    blockIdx.z = 0;
    ++block_epoch;
    smem.assign((l.smem_bytes + 7) / 8, ~uint64_t(0));
    run_block();
  }
}
}  // namespace emu

#define GTPO_SHARED_ARRAY(type, name, count) \
  static emu::SharedSlot name##_emu_slot;    \
  type* name = name##_emu_slot.get<type>(count)
#define GTPO_DYNAMIC_SHARED(type, name) type* name = reinterpret_cast<type*>(emu::smem.data())

inline void __syncthreads() {
  emu::thr[emu::cur].state = emu::BAR;
  emu::yield();
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  if (mask != 0xffffffffu) emu::die("partial syncwarp");
  auto& t = emu::thr[emu::cur];
  t.kind = 2;
  t.off = 0;
  t.state = emu::WARP;
  emu::yield();
}
inline float __shfl_xor_sync(unsigned mask, float v, int o) { return emu::shfl_xor(mask, v, o); }
inline double __shfl_xor_sync(unsigned mask, double v, int o) { return emu::shfl_xor(mask, v, o); }
inline int __shfl_xor_sync(unsigned mask, int v, int o) { return emu::shfl_xor(mask, v, o); }

// The correctly rounded intrinsics are plain IEEE operations on the host (the kernel headers call them only
// under __CUDA_ARCH__, but a host build of device code may reach them).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
