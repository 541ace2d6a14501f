// GEMM on the CPU: our own register kernel (cpu_gemm_kernel.h), C cut into row groups x column panels that
// are spread over threads. Each element of C is one in-order chain of fused multiply-adds (see the kernel's
// header), so how C is cut, and so the thread count, never changes a bit; nor does the number of rows, so a
// decode step's projections round exactly as the training forward's. Large products (A^T B with a big C,
// and GPT-2-sized projections) go to Eigen's tiles instead (cpu_gemm_eigen.cpp), deterministic across
// thread counts too.
//
// Why our own (Eigen alone before 2026-12-04): the models here have hidden sizes of 64-1024, so most
// products have a depth of 64-256, where packing both operands costs a large share of the multiply, and a
// small weight gradient ([out, in] summed over thousands of rows) was one Eigen tile, so one thread. Here B
// is read in place when stored [k, n] (input and weight gradients), A is never packed, and a transposed B
// (a forward's weight, stored [n, k]) is packed panel by panel by each thread that uses it.
// docs/performance.md has the measurements.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/cpu_gemm_eigen.h"
#include "runtime/cpu/cpu_gemm_kernel.h"
#include "runtime/cpu/cpu_transpose.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {
using cpu_gemm::kPanel;
using cpu_gemm::OperandA;
using cpu_gemm::Step;

// op(A) = A^T with B in place and a C larger than this goes to Eigen (cpu_gemm_eigen.cpp): those are the
// weight gradients of layers wider than the quick start's, deep products over two large row-strided
// operands, where packing both pays. Below it (every weight gradient of a hidden-64 model) Eigen's tiles
// left one tile, so one thread, and this kernel was 1.1-2.5x faster on two threads.
constexpr int64_t kEigenMinOutput = 16384;
// So does any product whose depth and width both reach this (GPT-2 124M's 768 x 2304 projections, a
// 50,257-token LM head): there packing both operands pays too, and the register kernel, which packs at most
// B, ran at 0.75-0.9 of Eigen's speed (GPT-2 124M training 12% slower). Hidden sizes below it (the quick
// start's 64, the larger TRL job's 256 and its 704-wide MLP) stay on the register kernel.
constexpr int64_t kEigenMinDepthWidth = 512;

// Multiply-adds below which a product runs on one thread (a single sequence's decode step).
constexpr int64_t kSerialWork = int64_t{1} << 16;

// Rows of a unit of work at most: eight register tiles.
constexpr int64_t kGroupRows = 8 * cpu_gemm::Vec::kRows;

// Row groups for an m-row product with `column_units` (entry, panel) pairs on `threads` threads: enough
// groups of at most kGroupRows, then more until the units split evenly over the threads (a decode step's
// [128, 64] x [64, 32] is then two groups of 64 rows on two threads, not 96 + 32). The cut may follow the
// thread count because no bit of C depends on it.
int64_t row_groups(int64_t m, int64_t column_units, int64_t threads) {
  int64_t groups = (m + kGroupRows - 1) / kGroupRows;
  while (groups < m && (groups * column_units) % threads != 0) ++groups;
  return groups;
}

// B rows (stored [k, n]) at least this many floats apart are copied per depth block (see product_block).
constexpr int64_t kStripCopyStride = 1024;

// Depth per block. Each thread walks the depth blocks outermost over all its units (product_block), so a
// deep product's A and B blocks are read from L2 by every unit of the thread; 128 and 512 measured the same.
constexpr int64_t kDepthBlock = 256;

// The panel of a B stored [n, k] (transposed) as the kernel reads it: columns [j0, j0 + cols) of op(B) as a
// contiguous [k, kPanel] block, packed[p * kPanel + j] = B[j0 + j, p]: rows j0.. of B transposed, by 8 x 8
// register blocks (the element-by-element copy, strided stores one float at a time, was 8% of a hidden-256
// RL step; each decode step packs every weight it multiplies).
void pack_panel(const float* b, int64_t ldb, int64_t k, int64_t j0, int64_t cols, float* packed) {
  cpu_transpose::copy(b + j0 * ldb, ldb, cols, k, packed, kPanel);
}

// The calling thread's contiguous copy [rows, kPanel] of a B depth block read in place, rows ldb apart from
// `source`. Consecutive units of a thread often share the panel (panel-major order): the copy of the
// previous unit is then reused, identified by its source address within this GEMM call (`product`).
struct StripCache {
  std::vector<float> data = std::vector<float>(static_cast<size_t>(kDepthBlock * kPanel));
  const float* source = nullptr;
  uint64_t product = 0;
};

const float* copied_strip(const float* source, int64_t ldb, int64_t rows, int64_t cols, uint64_t product) {
  thread_local StripCache cache;
  if (cache.source != source || cache.product != product) {
    for (int64_t p = 0; p < rows; ++p)
      std::memcpy(cache.data.data() + p * kPanel, source + p * ldb, cols * sizeof(float));
    cache.source = source;
    cache.product = product;
  }
  return cache.data.data();
}

// A transposed B is packed by each thread for itself, panel by panel as its units first need them: one
// packed copy shared by both cores cost more in cache-line transfers than packing twice (a decode step's
// [128, 64] x [64, 192] ran no faster on two threads than on one that way). Units are ordered row group
// first, so a thread reuses its group of A across the panels; it packs each panel of a column block once.
// Column blocks bound the copy (kPackFloats per thread) for wide products such as an LM head.
constexpr int64_t kPackFloats = int64_t{1} << 20;  // 4 MB

struct PanelCache {
  std::vector<float> data;
  std::vector<uint8_t> packed;  // per panel of the block
  uint64_t product = 0;
  int64_t entry = -1, col0 = -1;
};
std::atomic<uint64_t> products{0};

// Panel `panel` of the column block from col0, packed by the calling thread. `product` identifies the GEMM
// call, so a panel left from an earlier call (whose B may since have changed) is never taken for this one.
const float* packed_panel(const GemmArgs& g, uint64_t product, int64_t entry, int64_t col0,
                          int64_t block_cols, int64_t panel) {
  thread_local PanelCache cache;
  const int64_t block_panels = (block_cols + kPanel - 1) / kPanel;
  if (cache.product != product || cache.entry != entry || cache.col0 != col0) {
    cache.data.resize(std::max(cache.data.size(), static_cast<size_t>(block_panels * g.k * kPanel)));
    cache.packed.assign(static_cast<size_t>(block_panels), 0);
    cache.product = product;
    cache.entry = entry;
    cache.col0 = col0;
  }
  float* out = cache.data.data() + panel * g.k * kPanel;
  if (!cache.packed[static_cast<size_t>(panel)]) {
    const int64_t j0 = col0 + panel * kPanel, cols = std::min(kPanel, g.n - j0);
    pack_panel(g.b + entry * g.stride_b, g.ldb, g.k, j0, cols, out);
    cache.packed[static_cast<size_t>(panel)] = 1;
  }
  return out;
}

// Columns [col0, col0 + block_cols) of C = alpha * op(A) op(B), written straight into c (beta = 0 semantics).
void product_block(const GemmArgs& g, float* c, int64_t ldc, int64_t c_stride, int64_t col0,
                   int64_t block_cols) {
  const int64_t panels = (block_cols + kPanel - 1) / kPanel;
  // A product of fewer multiply-adds than kSerialWork runs on the calling thread: waking a second one costs
  // more than it saves.
  const bool serial = omp_in_parallel() || g.batch * g.m * block_cols * g.k < kSerialWork;
  const int64_t threads = serial ? 1 : omp_get_max_threads();
  const int64_t wanted_groups = row_groups(g.m, panels * g.batch, threads);
  const int64_t group_rows = (g.m + wanted_groups - 1) / wanted_groups;
  const int64_t groups = (g.m + group_rows - 1) / group_rows;
  // A unit is one (entry, row group, panel). Threads take contiguous runs of units, so the more numerous of
  // groups and panels goes outermost: that splits the work evenly (a weight gradient has few row groups and
  // many panels, a forward many groups), and a thread's run reuses the inner one's operand from cache.
  const bool group_major = groups >= panels;
  const int64_t units = g.batch * groups * panels;
  // One unit per chunk: the units are as even as the shape allows, and static scheduling hands each thread
  // an equal run of them.
  const int64_t grain = serial ? units : 1;
  const uint64_t id = ++products;
  const OperandA base{nullptr, g.lda, g.trans_a};
  parallel_for(units, grain, [&](int64_t u0, int64_t u1) {
    // Depth blocks outermost: a deep product (a weight gradient sums over thousands of rows) then streams
    // its A and B once, each depth block from L2 for all of this thread's units, with C's partial sums in
    // between; a product of depth <= kDepthBlock is one block.
    for (int64_t p0 = 0; p0 < g.k; p0 += kDepthBlock) {
      const int64_t p1 = std::min(g.k, p0 + kDepthBlock);
      const Step step{p0 == 0, p1 == g.k, g.alpha};
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t entry = u / (groups * panels), rest = u % (groups * panels);
        const int64_t group = group_major ? rest / panels : rest % groups;
        const int64_t panel = group_major ? rest % panels : rest / groups;
        OperandA A = base;
        A.a = g.a + entry * g.stride_a;
        const int64_t i0 = group * group_rows, i1 = std::min(g.m, i0 + group_rows);
        const int64_t j0 = col0 + panel * kPanel, cols = std::min(kPanel, col0 + block_cols - j0);
        // B in place when stored [k, n]; a transposed B through the thread's packed copy of the panel.
        const float* b =
            g.trans_b
                ? packed_panel(g, id, g.stride_b == 0 ? 0 : entry, col0, block_cols, panel) + p0 * kPanel
                : g.b + entry * g.stride_b + p0 * g.ldb + j0;
        int64_t ldb = g.trans_b ? kPanel : g.ldb;
        if (!g.trans_b && ldb >= kStripCopyStride) {
          // Rows a page or more apart: each row of the depth block would be its own TLB entry, reloaded
          // by every row tile; a contiguous copy of the block costs ~2% of its multiply-adds.
          b = copied_strip(b, ldb, p1 - p0, cols, id);
          ldb = kPanel;
        }
        float* cg = c + entry * c_stride + i0 * ldc + j0;
        if (g.trans_a)
          cpu_gemm::rows_range<true>(A, i0, i1, b, ldb, cg, ldc, p0, p1, cols, step);
        else
          cpu_gemm::rows_range<false>(A, i0, i1, b, ldb, cg, ldc, p0, p1, cols, step);
      }
    }
  });
}

void product(const GemmArgs& g, float* c, int64_t ldc, int64_t c_stride) {
  // Whole panels per column block, at least one; B read in place needs no blocks.
  const int64_t block_cols =
      g.trans_b ? std::max(kPanel, kPackFloats / std::max<int64_t>(g.k, 1) / kPanel * kPanel) : g.n;
  for (int64_t col0 = 0; col0 < g.n; col0 += block_cols)
    product_block(g, c, ldc, c_stride, col0, std::min(block_cols, g.n - col0));
}
}  // namespace

bool gemm_goes_to_eigen(const GemmArgs& g) {
  return (g.trans_a && !g.trans_b && g.m * g.n > kEigenMinOutput) ||
         std::min(g.k, g.n) >= kEigenMinDepthWidth;
}

// The register kernel packs a transposed B per thread and call into kPanel-wide panels (pack_panel), and
// reads B stored [k, n] in place: a B laid out as its panels, [panels, k, kPanel], is read as it would be
// packed. Eigen's tiles pack both operands whatever their layout, so nothing is gained there.
int64_t CpuBackend::gemm_b_panel_width(int64_t k, int64_t n) const {
  GemmArgs g;
  g.trans_b = true;
  g.m = 1;
  g.k = k;
  g.n = n;
  return gemm_goes_to_eigen(g) ? 0 : kPanel;
}

void CpuBackend::gemm(const GemmArgs& g) {
  GTPO_PRIMITIVE("gemm");
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (gemm_goes_to_eigen(g)) {
    gemm_eigen_tiles(g);
    return;
  }
  auto each_c = [&](auto&& f) {
    for (int64_t batch = 0; batch < g.batch; ++batch)
      for (int64_t i = 0; i < g.m; ++i) {
        float* row = g.c + batch * g.stride_c + i * g.ldc;
        for (int64_t j = 0; j < g.n; ++j) f(row[j], batch, i, j);
      }
  };
  if (g.k == 0) {  // an empty sum: C = beta * C, and beta = 0 writes zeros over whatever C held
    each_c([&](float& x, int64_t, int64_t, int64_t) { x = g.beta == 0.0f ? 0.0f : g.beta * x; });
    return;
  }
  if (g.beta == 0.0f) {
    product(g, g.c, g.ldc, g.stride_c);
    return;
  }
  // C = alpha * op(A) op(B) + beta * C: the product into a scratch matrix first, since the kernel keeps
  // partial sums in its output between depth blocks.
  std::vector<float> scratch(static_cast<size_t>(g.batch * g.m * g.n));
  product(g, scratch.data(), g.n, g.m * g.n);
  each_c([&](float& x, int64_t batch, int64_t i, int64_t j) {
    x = g.beta * x + scratch[static_cast<size_t>((batch * g.m + i) * g.n + j)];
  });
}

}  // namespace gtpo
