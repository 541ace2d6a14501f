// Kernels of the embedding gather and scatter-add, and the scatter's launch shape (design: cuda_embedding.cu).
// Device code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of
// thread blocks.
#pragma once
#include "runtime/cuda/cuda_kernel_common.cuh"

namespace gtpo::cuda {

namespace {

constexpr int kGatherThreads = 256;
constexpr int kScatterThreads = 128;
constexpr int kIdTile = 1024;          // ids staged in shared memory per pass over the positions
constexpr int64_t kVocabBuckets = 64;  // blocks along the vocabulary; see embedding_backward_kernel

// Launch shape of embedding_backward_kernel: a grid of column_blocks x buckets, bucket_rows ids per bucket.
struct ScatterShape {
  int64_t buckets = 0, bucket_rows = 0, column_blocks = 0;
};
inline ScatterShape scatter_shape(int64_t dim, int64_t vocab) {
  ScatterShape s;
  s.buckets = vocab < kVocabBuckets ? vocab : kVocabBuckets;
  s.bucket_rows = (vocab + s.buckets - 1) / s.buckets;  // buckets * bucket_rows >= vocab: every id has one
  s.column_blocks = (dim + kScatterThreads - 1) / kScatterThreads;
  return s;
}

__global__ void embedding_forward_kernel(const float* table, const int32_t* ids, float* out, int64_t n, int64_t dim) {
  const int64_t total = n * dim;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = i / dim;
    const int64_t c = i - r * dim;
    out[i] = table[static_cast<int64_t>(ids[r]) * dim + c];
  }
}

// gtable (zeroed before) += gy rows, without atomics: thread (column c, vocabulary bucket) walks every
// position in order and adds gy[r, c] into gtable[ids[r], c] when ids[r] falls in its bucket. Each
// gtable element thus has one owner that adds its positions in position order, starting from 0: the
// same float additions as the CPU's, so the result is bitwise the CPU's.
// Cost: each block scans all n ids (from shared memory), and the adds of one thread are a serial chain of
// read-modify-writes (~n / buckets of them). Buckets multiply the parallelism (dim x buckets threads) at
// the price of more scanning; this runs once per step for the input embedding, so simple wins.
__global__ void embedding_backward_kernel(const int32_t* ids, const float* gy, float* gtable, int64_t n, int64_t dim,
                                          int64_t bucket_rows) {
  GTPO_SHARED_ARRAY(int32_t, tile, kIdTile);
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t v_begin = blockIdx.y * bucket_rows;
  const int64_t v_end = v_begin + bucket_rows;
  for (int64_t t0 = 0; t0 < n; t0 += kIdTile) {
    const int64_t len = n - t0 < kIdTile ? n - t0 : kIdTile;
    __syncthreads();  // every thread is done with the previous tile
    for (int64_t k = threadIdx.x; k < len; k += blockDim.x) tile[k] = ids[t0 + k];
    __syncthreads();
    if (c < dim) {  // threads past the last column still take part in the tile loads and barriers
      for (int64_t k = 0; k < len; ++k) {
        const int64_t v = tile[k];
        if (v >= v_begin && v < v_end) gtable[v * dim + c] += gy[(t0 + k) * dim + c];
      }
    }
  }
}

}  // namespace

}  // namespace gtpo::cuda
