// Large weight gradients on the CPU: Eigen's single-threaded kernel on fixed-size tiles of C, tiles spread
// over threads (cpu_gemm.cpp sends it op(A) = A^T products whose C has more than kEigenMinOutput elements,
// and products whose depth and width both reach kEigenMinDepthWidth).
// Tile shapes depend only on (m, n), so Eigen's internal blocking, and therefore every rounding, is the same
// whatever the thread count. Eigen packs both operands into contiguous micro-panels, which is what a deep
// product over two large, row-strided operands needs (rows 1 KB apart fall on few cache sets); the register
// kernel there, which packs neither, reached 0.35-0.75 of Eigen's speed on such shapes.
#define EIGEN_DONT_PARALLELIZE
// GCC 12 reports false "maybe uninitialized" warnings inside its own AVX-512 intrinsics when Eigen's
// kernels are inlined; they are not about this code.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no such warning and warns about the pragma
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include "runtime/cpu/cpu_gemm_eigen.h"

#include <Eigen/Core>

#include "runtime/parallel.h"

namespace gtpo {

namespace {
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using MutMap = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

constexpr int64_t kTileN = 512;

// Rows per tile: 128, or 64 when 128-row tiles would cut C into fewer than 4 tiles, as for a decode step's
// [128, hidden] activations: one or two tiles left a core idle (64 rows: 1.3-1.6x faster there on 2
// cores), while more, thinner tiles elsewhere only repack B more often (m = 256: 10-20% slower). Like every
// tile dimension it depends on the shape only, never on the thread count.
//
// A weight gradient (op(A) = A^T, depth = the batch's rows) is cut into an even number of row tiles of at
// most 256 rows instead: each tile packs all of B (the layer's input, [rows, n]) once, so 128-row tiles
// packed it 6 times for a 704-row gradient and left 3 + 3 uneven tiles (the last one 64 rows); 4 tiles of
// 176 rows ran 10% faster there, 2 of 128 for a [256, 256] gradient 9% faster than 4 of 64. Eigen's depth
// blocking, and so every bit, depends on the depth alone, not on a tile's rows.
inline int64_t tile_rows(int64_t m, int64_t n, bool weight_gradient) {
  if (weight_gradient) {
    const int64_t tiles = 2 * ((m + 511) / 512);
    return (m + 16 * tiles - 1) / (16 * tiles) * 16;
  }
  const int64_t tiles_128 = ((m + 127) / 128) * ((n + kTileN - 1) / kTileN);
  return tiles_128 < 4 ? 64 : 128;
}

// C[r0:r1, c0:c1] of one batch entry.
void gemm_tile(const GemmArgs& g, int64_t batch, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  const float* a = g.a + batch * g.stride_a;
  const float* b = g.b + batch * g.stride_b;
  float* c = g.c + batch * g.stride_c + r0 * g.ldc + c0;
  const int64_t rows = r1 - r0, cols = c1 - c0;
  MutMap C(c, rows, cols, Eigen::OuterStride<>(g.ldc));
  if (g.k == 0) {
    if (g.beta == 0.0f)
      C.setZero();
    else
      C *= g.beta;
    return;
  }
  // op(A) rows r0..r1: A is [m, k] (or stored [k, m] when transposed).
  auto run = [&](const auto& A, const auto& B) {
    if (g.beta == 0.0f) {
      C.noalias() = g.alpha * (A * B);
    } else {
      if (g.beta != 1.0f) C *= g.beta;
      C.noalias() += g.alpha * (A * B);
    }
  };
  auto with_b = [&](const auto& A) {
    if (g.trans_b) {
      ConstMap Bs(b + c0 * g.ldb, cols, g.k, Eigen::OuterStride<>(g.ldb));  // stored [n, k]
      run(A, Bs.transpose());
    } else {
      ConstMap Bs(b + c0, g.k, cols, Eigen::OuterStride<>(g.ldb));  // stored [k, n]
      run(A, Bs);
    }
  };
  if (g.trans_a) {
    ConstMap As(a + r0, g.k, rows, Eigen::OuterStride<>(g.lda));  // stored [k, m]
    with_b(As.transpose());
  } else {
    ConstMap As(a + r0 * g.lda, rows, g.k, Eigen::OuterStride<>(g.lda));  // stored [m, k]
    with_b(As);
  }
}
}  // namespace

void gemm_eigen_tiles(const GemmArgs& g) {
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  const int64_t tile_m = tile_rows(g.m, g.n, g.trans_a && !g.trans_b);
  const int64_t tiles_m = (g.m + tile_m - 1) / tile_m;
  const int64_t tiles_n = (g.n + kTileN - 1) / kTileN;
  const int64_t tiles = g.batch * tiles_m * tiles_n;
  parallel_for(tiles, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t batch = t / (tiles_m * tiles_n);
      const int64_t tm = (t / tiles_n) % tiles_m;
      const int64_t tn = t % tiles_n;
      gemm_tile(g, batch, tm * tile_m, std::min(g.m, (tm + 1) * tile_m), tn * kTileN,
                std::min(g.n, (tn + 1) * kTileN));
    }
  });
}

}  // namespace gtpo
