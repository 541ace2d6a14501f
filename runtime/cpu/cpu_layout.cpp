// Reductions over an axis, broadcasts along an axis, strided copies and permutes.
#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

// Backend::reduce_sum's order: chunk sums of kReduceChunkRows inputs, then their sum in chunk order. A
// tall reduction (a bias gradient: outer 1, len = tokens) computes its chunks in parallel; every output's
// arithmetic is the same whatever the thread count.
void CpuBackend::reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  GTPO_PRIMITIVE("reduce_sum");
  const int64_t chunks = (len + kReduceChunkRows - 1) / kReduceChunkRows;
  // chunk_sum(o, c, dst): dst[i] = the inputs of chunk c of outputs (o, i) added in index order from 0.0f.
  auto chunk_sum = [&](int64_t o, int64_t c, float* dst) {
    const float* src = x + o * len * inner;
    for (int64_t i = 0; i < inner; ++i) dst[i] = 0.0f;
    for (int64_t l = c * kReduceChunkRows; l < std::min(len, (c + 1) * kReduceChunkRows); ++l)
      for (int64_t i = 0; i < inner; ++i) dst[i] += src[l * inner + i];
  };
  auto scaled = [&](float* dst) {
    if (scale != 1.0f)
      for (int64_t i = 0; i < inner; ++i) dst[i] *= scale;
  };
  if (chunks <= 1) {  // one chunk: its sum from 0.0f is the total (0.0f + s == s; s is never -0)
    parallel_for(outer, grain_for(std::max<int64_t>(len, 1) * inner), [&](int64_t ob, int64_t oe) {
      for (int64_t o = ob; o < oe; ++o) {
        chunk_sum(o, 0, out + o * inner);
        scaled(out + o * inner);
      }
    });
    return;
  }
  std::vector<float> partials(static_cast<size_t>(chunks * outer * inner));
  parallel_for(outer * chunks, grain_for(kReduceChunkRows * inner), [&](int64_t b, int64_t e) {
    for (int64_t k = b; k < e; ++k) chunk_sum(k / chunks, k % chunks, partials.data() + k * inner);
  });
  parallel_for(outer, grain_for(chunks * inner), [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o) {
      float* dst = out + o * inner;
      for (int64_t i = 0; i < inner; ++i) dst[i] = 0.0f;
      for (int64_t c = 0; c < chunks; ++c)
        for (int64_t i = 0; i < inner; ++i)
          dst[i] += partials[static_cast<size_t>((o * chunks + c) * inner + i)];
      scaled(dst);
    }
  });
}

void CpuBackend::expand_axis(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
  GTPO_PRIMITIVE("expand_axis");
  parallel_for(outer, grain_for(len * inner), [&](int64_t ob, int64_t oe) {
    for (int64_t o = ob; o < oe; ++o)
      for (int64_t l = 0; l < len; ++l)
        for (int64_t i = 0; i < inner; ++i) out[(o * len + l) * inner + i] = scale * x[o * inner + i];
  });
}

void CpuBackend::copy_2d(void* dst, int64_t dst_row_stride, const void* src, int64_t src_row_stride, int64_t rows,
                         int64_t cols, size_t elem_size) {
  GTPO_PRIMITIVE("copy_2d");
  auto* d = static_cast<char*>(dst);
  auto* s = static_cast<const char*>(src);
  const size_t row_bytes = static_cast<size_t>(cols) * elem_size;
  parallel_for(rows, grain_for(cols), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r)
      std::memcpy(d + static_cast<size_t>(r * dst_row_stride) * elem_size,
                  s + static_cast<size_t>(r * src_row_stride) * elem_size, row_bytes);
  });
}

void CpuBackend::permute(const float* x, float* out, const std::vector<int64_t>& shape,
                         const std::vector<int64_t>& perm) {
  GTPO_PRIMITIVE("permute");
  const int64_t rank = static_cast<int64_t>(shape.size());
  GTPO_CHECK(rank <= 8 && static_cast<int64_t>(perm.size()) == rank, "permute: rank ", rank, " unsupported");
  // in_strides[d]: stride of input dim d. For output coordinate, dim i walks input dim perm[i].
  int64_t in_strides[8];
  int64_t stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= shape[static_cast<size_t>(d)];
  }
  int64_t out_shape[8], walk[8];
  for (int64_t i = 0; i < rank; ++i) {
    out_shape[i] = shape[static_cast<size_t>(perm[static_cast<size_t>(i)])];
    walk[i] = in_strides[perm[static_cast<size_t>(i)]];
  }
  const int64_t n = stride;
  if (n == 0) return;
  const int64_t last = rank > 0 ? out_shape[rank - 1] : 1;
  const int64_t rows = n / last;
  parallel_for(rows, grain_for(last), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      // Decompose the output row index into coordinates of all but the last output dim.
      int64_t rem = r, offset = 0;
      for (int64_t i = rank - 2; i >= 0; --i) {
        offset += (rem % out_shape[i]) * walk[i];
        rem /= out_shape[i];
      }
      const int64_t step = rank > 0 ? walk[rank - 1] : 1;
      float* dst = out + r * last;
      for (int64_t j = 0; j < last; ++j) dst[j] = x[offset + j * step];
    }
  });
}

// Per buffer: fixed chunks summed in chunk order, so the result does not depend on the thread count.
void CpuBackend::sum_squares_each(const std::vector<const float*>& xs, const std::vector<int64_t>& ns,
                                  double* out) {
  GTPO_PRIMITIVE("sum_squares");
  constexpr int64_t kChunk = 1 << 14;
  for (size_t b = 0; b < xs.size(); ++b) {
    const float* x = xs[b];
    const int64_t n = ns[b];
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    std::vector<double> partial(static_cast<size_t>(chunks), 0.0);
    parallel_for(chunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double acc = 0.0;
        const int64_t end = std::min(n, (c + 1) * kChunk);
        for (int64_t i = c * kChunk; i < end; ++i) acc += static_cast<double>(x[i]) * x[i];
        partial[static_cast<size_t>(c)] = acc;
      }
    });
    double total = 0.0;
    for (double p : partial) total += p;
    out[b] = total;
  }
}

}  // namespace gtpo
