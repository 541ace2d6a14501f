// The CUDA kernels other than attention and GEMM (runtime/cuda/*_kernels.cuh) checked without a GPU against
// the CPU backend: emu.h runs each thread block as fibers with real __syncthreads and warp-shuffle semantics.
// EmuBackend below launches the kernels exactly as the .cu files do (same grid, block size, shared memory,
// scratch layout and early returns, from the same shape functions), into outputs poisoned with NaN; every
// case runs in each of emu.h's thread (and block) orders and must give the same bits each time, then is
// compared with CpuBackend's primitive on the same inputs.
//
// Tolerances (normwise: max |got - want| over max |want| of each output; non-finite values must match
// exactly): the CPU's bits where the kernels promise them (elementwise, AdamW, reduce_sum, expand_axis,
// permute, copy_2d, embedding, RoPE). Elsewhere the double row sums are added in another order than the
// CPU's, and the losses' CPU exp is a polynomial: softmax 2e-7, LayerNorm/RMSNorm 2e-6, losses 2e-6,
// sum_squares 1e-13 (a double). (Softmax and the norms come out bitwise at these sizes; the losses within
// 4e-8.) On the host the kernels' expf/logf/tanhf/powf are glibc's, as on the CPU, so "bitwise" here says
// nothing about CUDA's libm, which is a few ulp away on the device.
// Usage: test_cuda_kernels_emulated [name filter].
#include "emu.h"  // first: it defines what the kernel headers expect of CUDA
//
#include "runtime/cuda/cuda_adamw_kernels.cuh"
#include "runtime/cuda/cuda_elementwise_kernels.cuh"
#include "runtime/cuda/cuda_embedding_kernels.cuh"
#include "runtime/cuda/cuda_layout_kernels.cuh"
#include "runtime/cuda/cuda_losses_kernels.cuh"
#include "runtime/cuda/cuda_norm_kernels.cuh"
#include "runtime/cuda/cuda_rope_kernels.cuh"
#include "runtime/cuda/cuda_softmax_kernels.cuh"
//
#include <chrono>
#include <string>

#include "kernel_check.h"
#include "runtime/cpu/cpu_backend.h"

namespace K = gtpo::cuda;
using gtpo::BinaryOp;
using gtpo::BinaryPlan;
using gtpo::BroadcastMode;
using gtpo::UnaryOp;
using gtpo::RopeFrequencies;
using gtpo::RopeScaling;

// ---- the CUDA backend's launch code, on the emulator ---------------------------------------------------
struct EmuBackend {
  std::vector<std::vector<double>> scratches;
  std::vector<std::vector<float>> scratch_floats;
  double* scratch_doubles(size_t count) {
    scratches.emplace_back(count, std::numeric_limits<double>::quiet_NaN());
    return scratches.back().data();
  }
  template <typename... P, typename... A>
  static void launch(void (*kernel)(P...), unsigned gx, unsigned gy, int threads, size_t smem, A&&... args) {
    emu_launch(kernel, gx, gy, threads, smem, std::forward<A>(args)...);
  }

  // cuda_elementwise.cu
  template <UnaryOp Op>
  void unary_op(const float* x, float* y, int64_t n, float s) {
    launch(K::unary_kernel<Op>, K::grid_for(n, K::kElementwiseThreads), 1, K::kElementwiseThreads, 0, x, y, n,
           s);
  }
  template <UnaryOp Op>
  void unary_grad_op(const float* x, const float* y, const float* gy, float* gx, int64_t n, float s) {
    launch(K::unary_backward_kernel<Op>, K::grid_for(n, K::kElementwiseThreads), 1, K::kElementwiseThreads, 0,
           x, y, gy, gx, n, s);
  }
  void unary(UnaryOp op, const float* x, float* y, int64_t n, float s) {
    if (n <= 0) return;
    gtpo::elementwise::dispatch_unary(op, [&](auto o) { unary_op<decltype(o)::value>(x, y, n, s); });
  }
  void unary_backward(UnaryOp op, const float* x, const float* y, const float* gy, float* gx, int64_t n,
                      float s) {
    if (n <= 0) return;
    gtpo::elementwise::dispatch_unary(op,
                                      [&](auto o) { unary_grad_op<decltype(o)::value>(x, y, gy, gx, n, s); });
  }
  template <BinaryOp Op>
  void binary_op(const float* a, const float* b, float* out, const BinaryPlan& p) {
    const int64_t n = p.rows * p.cols;
    const unsigned g = K::grid_for(n, K::kElementwiseThreads);
    if (p.a == BroadcastMode::full && p.b == BroadcastMode::full)
      launch(K::binary_full_kernel<Op>, g, 1, K::kElementwiseThreads, 0, a, b, out, n);
    else
      launch(K::binary_broadcast_kernel<Op>, g, 1, K::kElementwiseThreads, 0, a, b, out, p.rows, p.cols, p.a,
             p.b);
  }
  void binary(BinaryOp op, const float* a, const float* b, float* out, const BinaryPlan& plan) {
    if (plan.rows <= 0 || plan.cols <= 0) return;
    gtpo::elementwise::dispatch_binary(op, [&](auto o) { binary_op<decltype(o)::value>(a, b, out, plan); });
  }

  // cuda_layout.cu
  void reduce_sum(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
    const int64_t n = outer * inner;
    if (n <= 0) return;
    if (K::reduce_sum_in_two_passes(n, len)) {
      const int64_t chunks = K::reduce_chunks(len);
      scratch_floats.emplace_back(static_cast<size_t>(chunks * n), kNaN);
      float* partials = scratch_floats.back().data();
      launch(K::reduce_sum_chunks_kernel, K::grid_for(n, K::kLayoutThreads), static_cast<unsigned>(chunks),
             K::kLayoutThreads, 0, x, partials, n, len, inner);
      launch(K::reduce_sum_finish_kernel, K::grid_for(n, K::kLayoutThreads), 1, K::kLayoutThreads, 0,
             partials, out, n, chunks, scale);
      return;
    }
    launch(K::reduce_sum_kernel, K::grid_for(n, K::kLayoutThreads), 1, K::kLayoutThreads, 0, x, out, outer,
           len, inner, scale);
  }
  void expand_axis(const float* x, float* out, int64_t outer, int64_t len, int64_t inner, float scale) {
    const int64_t n = outer * len * inner;
    if (n <= 0) return;
    launch(K::expand_axis_kernel, K::grid_for(n, K::kLayoutThreads), 1, K::kLayoutThreads, 0, x, out, outer,
           len, inner, scale);
  }
  // Only the kernel path of copy_2d (the others are cudaMemcpy(2D)Async); the caller picks such a case.
  void copy_2d(void* dst, int64_t dst_row_stride, const void* src, int64_t src_row_stride, int64_t rows,
               int64_t cols, size_t elem_size) {
    const int64_t elem = static_cast<int64_t>(elem_size), width = cols * elem;
    const int64_t dst_pitch = dst_row_stride * elem, src_pitch = src_row_stride * elem;
    if (rows <= 1 || (dst_pitch >= width && src_pitch >= width)) emu::die("copy_2d: not the kernel path");
    launch(K::copy_2d_kernel, K::grid_for(rows * width, K::kLayoutThreads), 1, K::kLayoutThreads, 0,
           static_cast<char*>(dst), dst_pitch, static_cast<const char*>(src), src_pitch, rows, width);
  }
  void permute(const float* x, float* out, const std::vector<int64_t>& shape,
               const std::vector<int64_t>& perm) {
    const K::PermutePlan plan = K::make_permute_plan(shape, perm);
    if (plan.numel <= 0) return;
    launch(K::permute_kernel, K::grid_for(plan.numel, K::kLayoutThreads), 1, K::kLayoutThreads, 0, x, out,
           plan);
  }
  // cuda_layout.cu's sum_squares_each: one results array, the partials reused buffer after buffer.
  void sum_squares_each(const std::vector<const float*>& xs, const std::vector<int64_t>& ns, double* out) {
    if (xs.empty()) return;
    int64_t most_blocks = 1;
    for (int64_t n : ns) most_blocks = std::max<int64_t>(most_blocks, K::plan_sum_squares(n).blocks);
    double* results = scratch_doubles(xs.size() + static_cast<size_t>(most_blocks));
    double* partials = results + xs.size();
    for (size_t b = 0; b < xs.size(); ++b) {
      const K::SumSquaresPlan plan = K::plan_sum_squares(ns[b]);
      if (plan.blocks == 0) {
        results[b] = 0.0;
        continue;
      }
      launch(K::sum_squares_partials_kernel, static_cast<unsigned>(plan.blocks), 1, K::kSumSquaresThreads, 0,
             xs[b], ns[b], plan.chunk, partials);
      launch(K::sum_squares_final_kernel, 1, 1, K::kSumSquaresThreads, 0, partials, plan.blocks, results + b);
    }
    std::copy(results, results + xs.size(), out);
  }
  double sum_squares(const float* x, int64_t n) {
    double out = 0.0;
    sum_squares_each({x}, {n}, &out);
    return out;
  }

  // cuda_softmax.cu
  void softmax_forward(const float* x, float* y, int64_t rows, int64_t cols, bool log_softmax) {
    if (rows <= 0 || cols <= 0) return;
    launch(K::softmax_forward_kernel, K::row_grid(rows), 1, K::row_threads(cols), 0, x, y, rows, cols,
           log_softmax);
  }
  void softmax_backward(const float* y, const float* gy, float* gx, int64_t rows, int64_t cols,
                        bool log_softmax) {
    if (rows <= 0 || cols <= 0) return;
    launch(K::softmax_backward_kernel, K::row_grid(rows), 1, K::row_threads(cols), 0, y, gy, gx, rows, cols,
           log_softmax);
  }

  // cuda_norm.cu
  void norm_param_grads(const float* x, const float* mean, const float* rstd, const float* gy, float* gweight,
                        float* gbias, int64_t rows, int64_t cols) {
    if (cols <= 0) return;
    const K::RowChunks rc = K::row_chunks(rows);
    double* partial_w = nullptr;
    double* partial_b = nullptr;
    if (rc.chunks > 0) {
      const int64_t per = rc.chunks * cols;
      partial_w = scratch_doubles(static_cast<size_t>(per * (gbias ? 2 : 1)));
      partial_b = gbias ? partial_w + per : nullptr;
      launch(K::norm_column_partials_kernel, K::column_blocks(cols), static_cast<unsigned>(rc.chunks),
             K::kColumnThreads, 0, x, mean, rstd, gy, partial_w, partial_b, rows, cols, rc.rows_per_chunk);
    }
    launch(K::norm_column_finish_kernel, K::grid_for(cols, K::kColumnThreads), 1, K::kColumnThreads, 0,
           partial_w, partial_b, gweight, gbias, rc.chunks, cols);
  }
  void layer_norm_forward(const float* x, const float* weight, const float* bias, float* y, float* mean,
                          float* rstd, int64_t rows, int64_t cols, float eps) {
    if (rows <= 0) return;
    launch(K::layer_norm_forward_kernel, K::row_grid(rows), 1, K::row_threads(cols), 0, x, weight, bias, y,
           mean, rstd, rows, cols, eps);
  }
  void layer_norm_backward(const float* x, const float* weight, const float* mean, const float* rstd,
                           const float* gy, float* gx, float* gweight, float* gbias, int64_t rows,
                           int64_t cols) {
    if (cols <= 0) return;
    if (rows > 0)
      launch(K::layer_norm_backward_kernel, K::row_grid(rows), 1, K::row_threads(cols), 0, x, weight, mean,
             rstd, gy, gx, rows, cols);
    norm_param_grads(x, mean, rstd, gy, gweight, gbias, rows, cols);
  }
  void rms_norm_forward(const float* x, const float* weight, float* y, float* rstd, int64_t rows,
                        int64_t cols, float eps) {
    if (rows <= 0) return;
    launch(K::rms_norm_forward_kernel, K::row_grid(rows), 1, K::row_threads(cols), 0, x, weight, y, rstd,
           rows, cols, eps);
  }
  void rms_norm_backward(const float* x, const float* weight, const float* rstd, const float* gy, float* gx,
                         float* gweight, int64_t rows, int64_t cols) {
    if (cols <= 0) return;
    if (rows > 0)
      launch(K::rms_norm_backward_kernel, K::row_grid(rows), 1, K::row_threads(cols), 0, x, weight, rstd, gy,
             gx, rows, cols);
    norm_param_grads(x, nullptr, rstd, gy, gweight, nullptr, rows, cols);
  }

  // cuda_embedding.cu
  void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t n, int64_t dim) {
    if (n <= 0 || dim <= 0) return;
    launch(K::embedding_forward_kernel, K::grid_for(n * dim, K::kGatherThreads), 1, K::kGatherThreads, 0,
           table, ids, out, n, dim);
  }
  void embedding_backward(const int32_t* ids, const float* gy, float* gtable, int64_t n, int64_t dim,
                          int64_t vocab) {
    if (dim <= 0 || vocab <= 0) return;
    std::memset(gtable, 0, static_cast<size_t>(vocab * dim) * sizeof(float));  // the cudaMemsetAsync
    if (n <= 0) return;
    const K::ScatterShape shape = K::scatter_shape(dim, vocab);
    launch(K::embedding_backward_kernel, static_cast<unsigned>(shape.column_blocks),
           static_cast<unsigned>(shape.buckets), K::kScatterThreads, 0, ids, gy, gtable, n, dim,
           shape.bucket_rows);
  }

  // cuda_rope.cu
  void rope(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
            int64_t head_dim, const RopeFrequencies& freq, bool inverse) {
    const int64_t half = head_dim / 2;
    if (rows <= 0 || heads <= 0 || half <= 0) return;
    if (half > K::kMaxRopeHalf) emu::die("rope: head_dim too large");
    launch(K::rope_kernel, K::row_grid(rows), 1, K::kRopeThreads, K::rope_shared_bytes(half), x, positions,
           out, rows, heads, head_dim, RopeFrequencies(freq), inverse);
  }

  // cuda_losses.cu
  void cross_entropy_forward(const float* logits, const int32_t* targets, float* loss, float* lse,
                             int64_t rows, int64_t vocab, int32_t ignore_index) {
    if (rows <= 0 || vocab <= 0) return;
    launch(K::cross_entropy_forward_kernel, K::row_grid(rows), 1, K::row_threads(vocab), 0, logits, targets,
           loss, lse, rows, vocab, ignore_index);
  }
  void cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                              const float* grow, float* glogits, int64_t rows, int64_t vocab,
                              int32_t ignore_index) {
    if (rows <= 0 || vocab <= 0) return;
    launch(K::cross_entropy_backward_kernel, K::row_grid(rows), 1, K::row_threads(vocab), 0, logits, targets,
           lse, grow, glogits, rows, vocab, ignore_index);
  }
  void logprob_entropy_forward(const float* logits, const int32_t* targets, float* logprob, float* entropy,
                               float* lse, int64_t rows, int64_t vocab, float inv_temperature) {
    if (rows <= 0 || vocab <= 0) return;
    launch(K::logprob_entropy_forward_kernel, K::row_grid(rows), 1, K::row_threads(vocab), 0, logits, targets,
           logprob, entropy, lse, rows, vocab, inv_temperature);
  }
  void logprob_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                                const float* entropy, const float* glogprob, const float* gentropy,
                                float* glogits, int64_t rows, int64_t vocab, float inv_temperature) {
    if (rows <= 0 || vocab <= 0) return;
    launch(K::logprob_entropy_backward_kernel, K::row_grid(rows), 1, K::row_threads(vocab), 0, logits,
           targets, lse, entropy, glogprob, gentropy, glogits, rows, vocab, inv_temperature);
  }

  // cuda_adamw.cu
  void adamw_step(float* param, const float* grad, float* m, float* v, int64_t n,
                  const gtpo::AdamWStep& step) {
    if (n <= 0) return;
    const K::AdamwScalars k = K::adamw_scalars(step);
    launch(K::adamw_kernel, K::grid_for(n, K::kAdamwThreads), 1, K::kAdamwThreads, 0, param, grad, m, v, n,
           k);
  }
};

// ---- the harness (kernel_check.h), on this file's EmuBackend ------------------------------------------
template <typename F>
void check(const std::string& what, double tol, F&& f) {
  check_on<EmuBackend>(what, tol, std::forward<F>(f));
}

// ---- the cases ------------------------------------------------------------------------------------
const UnaryOp kUnaryOps[] = {UnaryOp::neg,        UnaryOp::exp,       UnaryOp::log,        UnaryOp::relu,
                             UnaryOp::gelu_tanh,  UnaryOp::silu,      UnaryOp::sigmoid,    UnaryOp::tanh,
                             UnaryOp::sqrt,       UnaryOp::square,    UnaryOp::reciprocal, UnaryOp::scale,
                             UnaryOp::add_scalar, UnaryOp::pow_scalar};
bool reads_input(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::relu || op == UnaryOp::gelu_tanh || op == UnaryOp::silu ||
         op == UnaryOp::square || op == UnaryOp::pow_scalar;
}
bool positive_domain(UnaryOp op) {
  return op == UnaryOp::log || op == UnaryOp::sqrt || op == UnaryOp::pow_scalar;
}

void elementwise_cases() {
  family = "elementwise";
  for (int64_t n : {1, 31, 33, 1000}) {
    for (UnaryOp op : kUnaryOps) {
      const bool pos = positive_domain(op);
      std::vector<float> x = uniform(n, pos ? 0.05f : -4.0f, 4.0f), gy = uniform(n, -1, 1);
      if (n > 3 && !pos) x[1] = 0.0f, x[2] = -0.0f;
      if (n > 3 && op == UnaryOp::relu) x[3] = kNaN;  // NaN -> 0, as on the CPU
      const float s = op == UnaryOp::pow_scalar ? 1.7f : 0.3f;
      const std::string tag = "op " + std::to_string(int(op)) + " n=" + std::to_string(n);
      check("unary fwd+bwd " + tag, -1, [&](auto& be) {
        std::vector<float> y = poisoned(n), gx = poisoned(n), y_inplace = x;
        be.unary(op, x.data(), y.data(), n, s);
        // The op passes null for the saved value a derivative does not read.
        const bool ri = reads_input(op), ro = K::grad_reads_output(op);
        be.unary_backward(op, ri ? x.data() : nullptr, ro ? y.data() : nullptr, gy.data(), gx.data(), n, s);
        be.unary(op, y_inplace.data(), y_inplace.data(), n, s);  // in place
        return Outs{D(y), D(gx), D(y_inplace)};
      });
    }
  }
  struct Shape {
    int64_t rows, cols;
  };
  const std::pair<BroadcastMode, BroadcastMode> modes[] = {
      {BroadcastMode::full, BroadcastMode::full},
      {BroadcastMode::full, BroadcastMode::repeat_rows},
      {BroadcastMode::repeat_rows, BroadcastMode::full},
      {BroadcastMode::full, BroadcastMode::repeat_cols},
      {BroadcastMode::repeat_cols, BroadcastMode::repeat_rows},
  };
  for (Shape sh : {Shape{1, 1}, Shape{3, 33}, Shape{31, 33}, Shape{1, 1000}}) {
    for (auto [ma, mb] : modes) {
      auto count = [&](BroadcastMode m) {
        return m == BroadcastMode::full          ? sh.rows * sh.cols
               : m == BroadcastMode::repeat_rows ? sh.cols
                                                 : sh.rows;
      };
      const std::vector<float> a = uniform(count(ma), -2, 2), b = uniform(count(mb), 0.5f, 2);
      BinaryPlan plan;
      plan.rows = sh.rows;
      plan.cols = sh.cols;
      plan.a = ma;
      plan.b = mb;
      const std::string tag = std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " modes " +
                              std::to_string(int(ma)) + "," + std::to_string(int(mb));
      check("binary add/sub/mul/div " + tag, -1, [&, ma = ma](auto& be) {
        Outs o;
        for (BinaryOp op : {BinaryOp::add, BinaryOp::sub, BinaryOp::mul, BinaryOp::div}) {
          std::vector<float> out = poisoned(sh.rows * sh.cols);
          be.binary(op, a.data(), b.data(), out.data(), plan);
          o.push_back(D(out));
          if (ma == BroadcastMode::full) {  // out == a
            std::vector<float> in_place = a;
            be.binary(op, in_place.data(), b.data(), in_place.data(), plan);
            o.push_back(D(in_place));
          }
        }
        return o;
      });
    }
  }
}

void adamw_cases() {
  family = "adamw";
  for (int64_t n : {1, 33, 1000}) {
    const std::vector<float> p0 = uniform(n, -1, 1);
    std::vector<std::vector<float>> grads;
    for (int s = 0; s < 3; ++s) grads.push_back(uniform(n, -0.1f, 0.1f));
    check("3 steps n=" + std::to_string(n), -1, [&](auto& be) {
      std::vector<float> p = p0, m(n, 0.0f), v(n, 0.0f);
      for (int s = 1; s <= 3; ++s) {
        const float b1 = 0.9f, b2 = 0.999f;
        be.adamw_step(
            p.data(), grads[s - 1].data(), m.data(), v.data(), n,
            {1e-3f, b1, b2, 1e-8f, 0.1f, 1.0f - std::pow(b1, float(s)), 1.0f - std::pow(b2, float(s))});
      }
      return Outs{D(p), D(m), D(v)};
    });
  }
}

void layout_cases() {
  family = "layout";
  struct RS {
    int64_t outer, len, inner;
  };
  // Chunks of 64: one chunk (up to 64 rows), two or three in one pass (65 and 150 rows), and two passes from
  // 4 chunks (a bias gradient's tall [4096, 160]; 1000 rows; a partial last chunk; outer > 1).
  for (RS r : {RS{1, 1, 1}, RS{3, 31, 1}, RS{2, 33, 5}, RS{1, 1000, 3}, RS{300, 2, 1}, RS{3, 0, 2},
               RS{3, 200, 70}, RS{1, 4096, 160}, RS{2, 300, 33}, RS{1, 64, 5}, RS{1, 65, 5}, RS{2, 150, 5}}) {
    const std::vector<float> x = uniform(r.outer * r.len * r.inner, -1, 1),
                             small = uniform(r.outer * r.inner, -1, 1);
    const std::string tag =
        std::to_string(r.outer) + "x" + std::to_string(r.len) + "x" + std::to_string(r.inner);
    check("reduce_sum, expand_axis " + tag, -1, [&](auto& be) {
      std::vector<float> s1 = poisoned(r.outer * r.inner), s2 = s1, e1 = poisoned(x.size()), e2 = e1;
      be.reduce_sum(x.data(), s1.data(), r.outer, r.len, r.inner, 1.0f);
      be.reduce_sum(x.data(), s2.data(), r.outer, r.len, r.inner, 0.37f);
      be.expand_axis(small.data(), e1.data(), r.outer, r.len, r.inner, 1.0f);
      be.expand_axis(small.data(), e2.data(), r.outer, r.len, r.inner, -0.5f);
      return Outs{D(s1), D(s2), D(e1), D(e2)};
    });
  }
  struct P {
    std::vector<int64_t> shape, perm;
  };
  for (const P& p : {P{{1}, {0}}, P{{3, 31}, {1, 0}}, P{{2, 3, 5, 7}, {3, 1, 0, 2}},
                     P{{1, 33, 1, 4}, {2, 0, 3, 1}}, P{{2, 1, 3, 2, 2, 1, 3, 2}, {7, 6, 5, 4, 3, 2, 1, 0}}}) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    const std::vector<float> x = uniform(n, -1, 1);
    check("permute rank " + std::to_string(p.shape.size()) + " n=" + std::to_string(n), -1, [&](auto& be) {
      std::vector<float> out = poisoned(n);
      be.permute(x.data(), out.data(), p.shape, p.perm);
      return Outs{D(out)};
    });
  }
  {  // copy_2d's kernel path: a source pitch below the row width (rows overlap)
    const std::vector<float> src = uniform(64, -1, 1);
    check("copy_2d kernel path (src pitch < width)", -1, [&](auto& be) {
      std::vector<float> dst = poisoned(3 * 7);
      be.copy_2d(dst.data(), 7, src.data(), 2, 3, 5, sizeof(float));
      return Outs{D(dst)};
    });
  }
  for (int64_t n : {1, 31, 4096, 4097, 300000}) {
    const std::vector<float> x = uniform(n, -3, 3);
    // Both sum in double, in different orders: only the last bits may differ.
    check("sum_squares n=" + std::to_string(n), 1e-13,
          [&](auto& be) { return Outs{{be.sum_squares(x.data(), n)}}; });
  }
  // Several buffers in one call (gradient clipping's): an empty one, one that needs many blocks, a small one.
  const std::vector<float> a = uniform(5000, -2, 2), b = uniform(33, -2, 2);
  check("sum_squares_each 4 buffers", 1e-13, [&](auto& be) {
    std::vector<double> out(4, kNaN);
    be.sum_squares_each({a.data(), nullptr, b.data(), a.data() + 7}, {5000, 0, 33, 100}, out.data());
    return Outs{out};
  });
}

void softmax_cases() {
  family = "softmax";
  struct S {
    int64_t rows, cols;
  };
  for (S s : {S{1, 1}, S{3, 31}, S{3, 33}, S{2, 1000}, S{2, 1025}, S{1, 4097}, S{1, 16385}}) {
    for (bool log : {false, true}) {
      std::vector<float> x = uniform(s.rows * s.cols, -8, 8);
      const std::vector<float> gy = uniform(s.rows * s.cols, -1, 1);
      if (s.rows == 3) {  // row 1 all -inf (no mass), row 2 some -inf
        for (int64_t c = 0; c < s.cols; ++c) x[s.cols + c] = -kInf;
        for (int64_t c = 0; c < s.cols; c += 3) x[2 * s.cols + c] = -kInf;
        if (s.cols > 1) x[2 * s.cols + 1] = 5.0f;
      }
      const std::string tag = std::string(log ? "log_softmax " : "softmax ") + std::to_string(s.rows) + "x" +
                              std::to_string(s.cols);
      check(tag + " fwd, bwd, in place", 2e-7, [&](auto& be) {
        std::vector<float> y = poisoned(x.size()), gx = poisoned(x.size()), inplace = x;
        be.softmax_forward(x.data(), y.data(), s.rows, s.cols, log);
        be.softmax_backward(y.data(), gy.data(), gx.data(), s.rows, s.cols, log);
        be.softmax_forward(inplace.data(), inplace.data(), s.rows, s.cols, log);
        return Outs{D(y), D(gx), D(inplace)};
      });
    }
  }
  {  // a row of -inf and NaN: NaN throughout, as on the CPU
    const std::vector<float> x = {-kInf, kNaN, -kInf, 1.0f, 2.0f, 3.0f};
    check("rows with NaN", 2e-7, [&](auto& be) {
      std::vector<float> y = poisoned(6), l = poisoned(6);
      be.softmax_forward(x.data(), y.data(), 2, 3, false);
      be.softmax_forward(x.data(), l.data(), 2, 3, true);
      return Outs{D(y), D(l)};
    });
  }
}

void norm_cases() {
  family = "norm";
  struct S {
    int64_t rows, cols;
  };
  for (S s : {S{1, 1}, S{3, 31}, S{3, 33}, S{2, 1000}, S{40, 33}, S{1, 1025}, S{1030, 5}}) {
    const size_t n = s.rows * s.cols;
    const std::vector<float> x = uniform(n, -2, 3), w = uniform(s.cols, 0.5f, 1.5f),
                             b = uniform(s.cols, -1, 1), gy = uniform(n, -1, 1);
    const std::string tag = std::to_string(s.rows) + "x" + std::to_string(s.cols);
    // 1030 rows: more than 16 rows per column chunk (64 chunks). The column kernels are RMSNorm's too, and
    // the emulation is slow for many small blocks, so LayerNorm skips that shape.
    for (bool bias : {true, false}) {
      if (s.rows > 1000) break;
      check(std::string("layer_norm ") + (bias ? "bias " : "no bias ") + tag, 2e-6, [&](auto& be) {
        std::vector<float> y = poisoned(n), mean = poisoned(s.rows), rstd = poisoned(s.rows),
                           gx = poisoned(n), gw = poisoned(s.cols), gb = poisoned(s.cols);
        be.layer_norm_forward(x.data(), w.data(), bias ? b.data() : nullptr, y.data(), mean.data(),
                              rstd.data(), s.rows, s.cols, 1e-5f);
        be.layer_norm_backward(x.data(), w.data(), mean.data(), rstd.data(), gy.data(), gx.data(), gw.data(),
                               bias ? gb.data() : nullptr, s.rows, s.cols);
        Outs o{D(y), D(mean), D(rstd), D(gx), D(gw)};
        if (bias) o.push_back(D(gb));
        return o;
      });
    }
    check("rms_norm " + tag, 2e-6, [&](auto& be) {
      std::vector<float> y = poisoned(n), rstd = poisoned(s.rows), gx = poisoned(n), gw = poisoned(s.cols);
      be.rms_norm_forward(x.data(), w.data(), y.data(), rstd.data(), s.rows, s.cols, 1e-6f);
      be.rms_norm_backward(x.data(), w.data(), rstd.data(), gy.data(), gx.data(), gw.data(), s.rows, s.cols);
      return Outs{D(y), D(rstd), D(gx), D(gw)};
    });
  }
  {  // cols == 0: the forward still writes mean and rstd; rows == 0: the backward still zeroes gweight, gbias
    const std::vector<float> w = uniform(7, 0.5f, 1.5f);
    check("empty: cols 0 forward, rows 0 backward", 2e-6, [&](auto& be) {
      std::vector<float> mean = poisoned(3), rstd = poisoned(3), rrms = poisoned(3), gw = poisoned(7),
                         gb = poisoned(7), gwr = poisoned(7);
      float dummy = 0;
      be.layer_norm_forward(&dummy, &dummy, &dummy, &dummy, mean.data(), rstd.data(), 3, 0, 1e-5f);
      be.rms_norm_forward(&dummy, &dummy, &dummy, rrms.data(), 3, 0, 1e-5f);
      be.layer_norm_backward(&dummy, w.data(), &dummy, &dummy, &dummy, &dummy, gw.data(), gb.data(), 0, 7);
      be.rms_norm_backward(&dummy, w.data(), &dummy, &dummy, &dummy, gwr.data(), 0, 7);
      return Outs{D(mean), D(rstd), D(rrms), D(gw), D(gb), D(gwr)};
    });
  }
}

void embedding_cases() {
  family = "embedding";
  struct S {
    int64_t n, dim, vocab;
  };
  for (S s : {S{1, 1, 1}, S{3, 31, 5}, S{1000, 33, 100}, S{1500, 200, 70}, S{40, 3, 1}, S{0, 4, 3}}) {
    const std::vector<float> table = uniform(s.vocab * s.dim, -1, 1), gy = uniform(s.n * s.dim, -1, 1);
    const std::vector<int32_t> ids = ints(s.n, 0, int32_t(s.vocab - 1));
    check("gather, scatter-add n=" + std::to_string(s.n) + " dim=" + std::to_string(s.dim) +
              " vocab=" + std::to_string(s.vocab),
          -1, [&](auto& be) {
            std::vector<float> out = poisoned(s.n * s.dim), gtable = poisoned(s.vocab * s.dim);
            be.embedding_forward(table.data(), ids.data(), out.data(), s.n, s.dim);
            be.embedding_backward(ids.data(), gy.data(), gtable.data(), s.n, s.dim, s.vocab);
            return Outs{D(out), D(gtable)};
          });
  }
}

void rope_cases() {
  family = "rope";
  struct S {
    int64_t rows, heads, head_dim;
    float theta;
  };
  for (S s : {S{1, 1, 6, 10000.0f}, S{3, 3, 6, 10000.0f}, S{7, 2, 64, 10000.0f}, S{2, 5, 64, 1e6f},
              S{1, 1, 2, 500.0f}}) {
    const size_t n = s.rows * s.heads * s.head_dim;
    const std::vector<float> x = uniform(n, -2, 2);
    std::vector<int32_t> pos = ints(s.rows, 0, 4095);
    pos[0] = 0;
    for (bool inverse : {false, true}) {
      check("rows=" + std::to_string(s.rows) + " heads=" + std::to_string(s.heads) +
                " head_dim=" + std::to_string(s.head_dim) + (inverse ? " inverse" : "") + ", in place",
            -1, [&](auto& be) {
              std::vector<float> out = poisoned(n), inplace = x;
              be.rope(x.data(), pos.data(), out.data(), s.rows, s.heads, s.head_dim, s.theta, inverse);
              be.rope(inplace.data(), pos.data(), inplace.data(), s.rows, s.heads, s.head_dim, s.theta,
                      inverse);
              return Outs{D(out), D(inplace)};
            });
    }
  }
  // The frequency rescalings (runtime/rope_frequencies.h), written once for host and device.
  for (RopeScaling kind : {RopeScaling::linear, RopeScaling::llama3}) {
    RopeFrequencies f(500000.0f);
    f.scaling = kind;
    f.factor = 8.0;
    f.original_max_position = 64.0;
    const int64_t rows = 5, heads = 3, head_dim = 64;
    const size_t n = rows * heads * head_dim;
    const std::vector<float> x = uniform(n, -2, 2);
    const std::vector<int32_t> pos = ints(rows, 0, 4095);
    for (bool inverse : {false, true}) {
      check(std::string(kind == RopeScaling::linear ? "linear" : "llama3") + " scaling" +
                (inverse ? " inverse" : ""),
            -1, [&](auto& be) {
              std::vector<float> out = poisoned(n);
              be.rope(x.data(), pos.data(), out.data(), rows, heads, head_dim, f, inverse);
              return Outs{D(out)};
            });
    }
  }
}

void loss_cases() {
  family = "losses";
  struct S {
    int64_t rows, vocab;
  };
  const int32_t ignore = -100;
  for (S s : {S{1, 1}, S{3, 31}, S{3, 33}, S{3, 1000}, S{2, 50257}}) {
    std::vector<float> x = uniform(s.rows * s.vocab, -6, 6);
    std::vector<int32_t> t = ints(s.rows, 0, int32_t(s.vocab - 1));
    const std::vector<float> grow = uniform(s.rows, 0.1f, 2), glp = uniform(s.rows, -1, 1),
                             gent = uniform(s.rows, -1, 1);
    if (s.rows == 3) {
      t[1] = ignore;      // an ignored row (cross-entropy only)
      if (s.vocab > 1) {  // a peaked row: p at the target within 1e-13 of 1
        for (int64_t k = 0; k < s.vocab; ++k) x[2 * s.vocab + k] = -20.0f;
        x[2 * s.vocab + t[2]] = 25.0f;
      }
    }
    std::vector<int32_t> t_all = t;  // logprob_entropy has no ignore_index
    for (auto& v : t_all) v = v == ignore ? 0 : v;
    const std::string tag = std::to_string(s.rows) + "x" + std::to_string(s.vocab);
    check("cross_entropy fwd+bwd " + tag, 2e-6, [&](auto& be) {
      std::vector<float> loss = poisoned(s.rows), lse = poisoned(s.rows), g = poisoned(x.size());
      be.cross_entropy_forward(x.data(), t.data(), loss.data(), lse.data(), s.rows, s.vocab, ignore);
      be.cross_entropy_backward(x.data(), t.data(), lse.data(), grow.data(), g.data(), s.rows, s.vocab,
                                ignore);
      return Outs{D(loss), D(lse), D(g)};
    });
    for (int which = 0; which < 4; ++which) {  // both gradients, only glogprob, only gentropy, neither
      const bool has_lp = which == 0 || which == 1, has_ent = which == 0 || which == 2;
      check("logprob_entropy fwd+bwd " + tag + (has_lp ? " glogprob" : " -") + (has_ent ? " gentropy" : " -"),
            2e-6, [&](auto& be) {
              std::vector<float> lp = poisoned(s.rows), ent = poisoned(s.rows), lse = poisoned(s.rows),
                                 g = poisoned(x.size());
              const float inv_t = 1.0f / 0.7f;
              be.logprob_entropy_forward(x.data(), t_all.data(), lp.data(), ent.data(), lse.data(), s.rows,
                                         s.vocab, inv_t);
              be.logprob_entropy_backward(x.data(), t_all.data(), lse.data(), ent.data(),
                                          has_lp ? glp.data() : nullptr, has_ent ? gent.data() : nullptr,
                                          g.data(), s.rows, s.vocab, inv_t);
              return Outs{D(lp), D(ent), D(lse), D(g)};
            });
      if (s.vocab > 1000) break;  // the big vocabulary once, with both gradients
    }
  }
}

int main(int argc, char** argv) {
  filter = argc > 1 ? argv[1] : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  elementwise_cases();
  adamw_cases();
  layout_cases();
  softmax_cases();
  norm_cases();
  embedding_cases();
  rope_cases();
  loss_cases();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("%d cases, %d failures, %.1f s, %lld fiber switches\n", cases, failures, s, emu::switches);
  return failures != 0 || cases == 0;
}
