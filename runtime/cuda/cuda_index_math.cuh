// Index arithmetic of the CUDA kernels and the row-major to cuBLAS mapping, kept apart from the kernels
// so that a host program can check it against the CPU backend's definitions. Nothing here launches work.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/backend.h"
#include "runtime/cuda/cuda_ieee.cuh"
#include "runtime/error.h"

#ifndef GTPO_HD
#define GTPO_HD __host__ __device__ __forceinline__
#endif

namespace gtpo::cuda {

// ---- grid-stride loops -------------------------------------------------------------------------
// 64-bit from the start: blockIdx.x * blockDim.x overflows 32 bits for n >= 2^31.
__device__ __forceinline__ int64_t first_index() { return blockIdx.x * int64_t(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t index_step() { return int64_t(gridDim.x) * blockDim.x; }

// ---- strided batches of row-major matrices ----------------------------------------------------------
// Element j of a dense [batch, rows, cols] walk, as an offset into a buffer whose matrices are `stride`
// apart with rows `ld` apart. rows, cols >= 1.
GTPO_HD int64_t strided_offset(int64_t j, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
  const int64_t per_matrix = rows * cols;
  const int64_t batch = j / per_matrix;
  const int64_t within = j - batch * per_matrix;
  const int64_t r = within / cols;
  const int64_t c = within - r * cols;
  return batch * stride + r * ld + c;
}

// ---- reduce_sum and expand_axis over x viewed as [outer, len, inner] ------------------------------------
// reduce_sum's order, the same on every backend (Backend::reduce_sum): the len inputs of an output are cut
// into chunks of kReduceChunkRows consecutive ones; each chunk is added in index order from 0.0f, the chunk
// sums in chunk order from 0.0f, and the total is scaled. With len <= kReduceChunkRows that is one pass in
// index order. The chunks let a tall reduction (a bias gradient: outer 1, len = tokens) run in parallel over
// its rows with these bits.
GTPO_HD int64_t reduce_chunks(int64_t len) { return (len + kReduceChunkRows - 1) / kReduceChunkRows; }

// Chunk c of output j = (o, i): its inputs added in index order from 0.0f.
GTPO_HD float reduce_chunk_sum(const float* x, int64_t len, int64_t inner, int64_t j, int64_t c) {
  const int64_t o = j / inner;
  const int64_t i = j - o * inner;
  // An index, not a pointer x + offset: with len == 0, x may be null (an empty input) and null + offset is
  // undefined behaviour even unread (UBSan found it in the emulated kernel tests).
  const int64_t base = o * len * inner + i;
  const int64_t end = (c + 1) * kReduceChunkRows < len ? (c + 1) * kReduceChunkRows : len;
  float acc = 0.0f;
  for (int64_t l = c * kReduceChunkRows; l < end; ++l) acc = ieee::add(acc, x[base + l * inner]);
  return acc;
}

// Output j of reduce_sum from its chunk sums (chunk_sum(c) for c in order), then scaled.
template <typename ChunkSum>
GTPO_HD float reduce_total(int64_t chunks, float scale, ChunkSum chunk_sum) {
  float acc = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) acc = ieee::add(acc, chunk_sum(c));
  if (scale != 1.0f) acc = ieee::mul(acc, scale);
  return acc;
}

GTPO_HD float reduce_sum_at(const float* x, int64_t len, int64_t inner, float scale, int64_t j) {
  return reduce_total(reduce_chunks(len), scale,
                      [&](int64_t c) { return reduce_chunk_sum(x, len, inner, j, c); });
}

// Input index feeding output j = (o, l, i) of expand_axis.
GTPO_HD int64_t expand_axis_source(int64_t len, int64_t inner, int64_t j) {
  return (j / (len * inner)) * inner + j % inner;
}

// ---- permute ----------------------------------------------------------------------------------
constexpr int kMaxPermuteRank = 8;

// Passed to the kernel by value. walk[i] is the input stride of output dim i (input dim perm[i]).
struct PermutePlan {
  int rank = 0;
  int64_t numel = 1;
  int64_t out_shape[kMaxPermuteRank] = {};
  int64_t walk[kMaxPermuteRank] = {};
};

inline PermutePlan make_permute_plan(const std::vector<int64_t>& shape, const std::vector<int64_t>& perm) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  GTPO_CHECK(rank <= kMaxPermuteRank && static_cast<int64_t>(perm.size()) == rank, "permute: rank ", rank,
             " unsupported");
  int64_t in_strides[kMaxPermuteRank] = {};
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  PermutePlan p;
  p.rank = static_cast<int>(rank);
  p.numel = stride;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t from = perm[static_cast<size_t>(i)];
    GTPO_CHECK(from >= 0 && from < rank, "permute: axis ", from, " out of range for rank ", rank);
    p.out_shape[i] = shape[static_cast<size_t>(from)];
    p.walk[i] = in_strides[from];
  }
  return p;
}

// Input offset of output element j (row-major over out_shape). Only called when numel > 0, so every
// out_shape entry is >= 1.
GTPO_HD int64_t permute_source(const PermutePlan& p, int64_t j) {
  int64_t offset = 0;
  for (int d = p.rank - 1; d >= 0; --d) {
    const int64_t q = j / p.out_shape[d];
    offset += (j - q * p.out_shape[d]) * p.walk[d];
    j = q;
  }
  return offset;
}

// ---- sum_squares ------------------------------------------------------------------------------
// Block b sums [b * chunk, min(n, (b + 1) * chunk)). The split depends on n alone (never on the GPU), so
// the order of every addition is fixed by the problem size.
constexpr int kSumSquaresThreads = 256;
constexpr int64_t kSumSquaresMaxBlocks = 1024;
constexpr int64_t kSumSquaresMinChunk = int64_t(kSumSquaresThreads) * 16;

struct SumSquaresPlan {
  int64_t chunk = 0;
  int64_t blocks = 0;
};

inline SumSquaresPlan plan_sum_squares(int64_t n) {
  SumSquaresPlan p;
  if (n <= 0) return p;
  p.chunk = std::max(kSumSquaresMinChunk, (n + kSumSquaresMaxBlocks - 1) / kSumSquaresMaxBlocks);
  p.blocks = (n + p.chunk - 1) / p.chunk;  // <= kSumSquaresMaxBlocks
  return p;
}

// ---- GEMM: row-major request -> column-major cuBLAS call ----------------------------------------------
// A row-major matrix with leading dimension ld is, read column-major, its transpose with the same ld. So
// row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B as its first operand and
// A as its second, m and n swap, and each operand keeps its own transpose flag (op(B)^T of a stored
// [k, n] is the column-major view itself; of a stored [n, k] it is that view transposed).

struct GemmOperand {
  const void* data = nullptr;
  int64_t ld = 0;
  int64_t stride = 0;  // elements between batch entries; 0 shares one matrix across the batch
};

// Row-major stored shapes: A is [m, k] ([k, m] when trans_a), B is [k, n] ([n, k] when trans_b).
inline int64_t stored_rows_a(const GemmArgs& g) { return g.trans_a ? g.k : g.m; }
inline int64_t stored_cols_a(const GemmArgs& g) { return g.trans_a ? g.m : g.k; }
inline int64_t stored_rows_b(const GemmArgs& g) { return g.trans_b ? g.n : g.k; }
inline int64_t stored_cols_b(const GemmArgs& g) { return g.trans_b ? g.k : g.n; }

// cuBLAS rejects ld < cols of the row-major matrix (the rows of its column-major view) even for a
// single-row matrix, whose ld is never used; the CPU accepts any ld there.
inline int64_t usable_ld(int64_t ld, int64_t rows, int64_t cols) { return rows <= 1 ? std::max(ld, cols) : ld; }

// cuBLAS's C (m x n, column-major) = op(A) op(B), op(A) m x k, op(B) k x n; see cublasGemmEx.
struct ColumnMajorGemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  GemmOperand a, b;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
};

// a and b describe the row-major operands of g (g's own pointers, or packed copies of them).
inline ColumnMajorGemm to_column_major(const GemmArgs& g, GemmOperand a, GemmOperand b) {
  ColumnMajorGemm cm;
  cm.trans_a = g.trans_b;
  cm.trans_b = g.trans_a;
  cm.m = g.n;
  cm.n = g.m;
  cm.k = g.k;
  cm.a = b;
  cm.a.ld = usable_ld(b.ld, stored_rows_b(g), stored_cols_b(g));
  cm.b = a;
  cm.b.ld = usable_ld(a.ld, stored_rows_a(g), stored_cols_a(g));
  cm.ldc = usable_ld(g.ldc, g.m, g.n);
  cm.stride_c = g.stride_c;
  cm.batch = g.batch;
  return cm;
}

inline ColumnMajorGemm to_column_major(const GemmArgs& g) {
  return to_column_major(g, GemmOperand{g.a, g.lda, g.stride_a}, GemmOperand{g.b, g.ldb, g.stride_b});
}

// bf16 mode packs each operand densely: one matrix when it is shared (stride 0) or the batch is 1.
inline int64_t packed_copies(int64_t batch, int64_t stride) { return (batch > 1 && stride != 0) ? batch : 1; }

}  // namespace gtpo::cuda
