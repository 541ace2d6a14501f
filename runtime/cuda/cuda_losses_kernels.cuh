// Kernels of the vocabulary losses (design: cuda_losses.cu).
// Device code only, no CUDA runtime API: tests/cuda_emulated runs these very kernels on a host emulation of
// thread blocks.
#pragma once
#include "runtime/cuda/cuda_kernel_common.cuh"
#include "runtime/cuda/cuda_row_math.cuh"

namespace gtpo::cuda {

namespace {

struct RowSums {
  float max;        // m = max_k z_k
  double log_sum;   // log S, S = sum_k e^(z_k - m)
  double sum;       // S
  double weighted;  // W = sum_k e^(z_k - m) (z_k - m)   (only with kWeighted)
};

// Must be reached by every thread of the block; all get the result.
// scale > 0, so max_k fl(x_k * scale) == fl(max_k x_k * scale): the max pass skips the multiply. fmaxf
// skips NaN (like the CPU's max); a NaN reaches the sums and the outputs instead.
// The terms with z_k == m (each exactly 1) are counted apart from the rest: S = c + R, log S =
// log c + log1p(R / c). In a peaked row R can be ~1e-13, and 1 + R in double would keep only a few of
// its digits, which is all of log S, of log p at the peak and a share of H.
template <bool kWeighted>
__device__ RowSums row_sums(const float* x, int64_t n, float scale, float* shared_f, double* shared_d) {
  float mx = -INFINITY;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) mx = fmaxf(mx, x[k]);
  RowSums out;
  out.max = ieee::mul(block_max(mx, shared_f), scale);
  double rest = 0.0, count = 0.0, w = 0.0;
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    const row_math::LogitTerms t = row_math::logit_terms(x[k], scale, out.max);
    rest += static_cast<double>(ieee::sub(t.e, t.at_max));
    count += static_cast<double>(t.at_max);
    if (kWeighted) w += static_cast<double>(t.e) * static_cast<double>(t.d);
  }
  rest = block_sum(rest, shared_d);
  count = block_sum(count, shared_d);
  out.weighted = kWeighted ? block_sum(w, shared_d) : 0.0;
  out.sum = count + rest;
  out.log_sum = row_math::log_sum_exp_shifted(count, rest);
  return out;
}

__global__ void cross_entropy_forward_kernel(const float* logits, const int32_t* targets, float* loss, float* lse,
                                             int64_t rows, int64_t vocab, int32_t ignore_index) {
  GTPO_SHARED_ARRAY(float, shared_f, kWarp);
  GTPO_SHARED_ARRAY(double, shared_d, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t t = targets[r];
    if (t == ignore_index) {  // uniform across the block
      if (threadIdx.x == 0) {
        loss[r] = 0.0f;
        lse[r] = 0.0f;
      }
      continue;
    }
    const float* x = logits + r * vocab;
    const RowSums s = row_sums<false>(x, vocab, 1.0f, shared_f, shared_d);
    if (threadIdx.x == 0) {
      // loss = lse - x_t = log S - (x_t - m); x_t - m is exact in double.
      loss[r] = static_cast<float>(s.log_sum - (static_cast<double>(x[t]) - static_cast<double>(s.max)));
      lse[r] = static_cast<float>(static_cast<double>(s.max) + s.log_sum);
    }
  }
}

// glogits[r] = grow[r] (p - onehot(t)); zeros for ignored rows.
__global__ void cross_entropy_backward_kernel(const float* logits, const int32_t* targets, const float* lse,
                                              const float* grow, float* glogits, int64_t rows, int64_t vocab,
                                              int32_t ignore_index) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float* g = glogits + r * vocab;
    const int32_t t = targets[r];
    if (t == ignore_index) {
      for (int64_t k = threadIdx.x; k < vocab; k += blockDim.x) g[k] = 0.0f;
      continue;
    }
    const float* x = logits + r * vocab;
    const float l = lse[r], gr = grow[r];
    for (int64_t k = threadIdx.x; k < vocab; k += blockDim.x)
      g[k] = k == t ? row_math::cross_entropy_grad_target(x[k], l, gr) : row_math::cross_entropy_grad(x[k], l, gr);
  }
}

__global__ void logprob_entropy_forward_kernel(const float* logits, const int32_t* targets, float* logprob,
                                               float* entropy, float* lse, int64_t rows, int64_t vocab,
                                               float inv_temperature) {
  GTPO_SHARED_ARRAY(float, shared_f, kWarp);
  GTPO_SHARED_ARRAY(double, shared_d, kWarp);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = logits + r * vocab;
    const RowSums s = row_sums<true>(x, vocab, inv_temperature, shared_f, shared_d);
    if (threadIdx.x == 0) {
      const float zt = ieee::mul(x[targets[r]], inv_temperature);
      logprob[r] = static_cast<float>((static_cast<double>(zt) - static_cast<double>(s.max)) - s.log_sum);
      // H = -sum p log p with log p = (z - m) - log S:  H = log S - W / S. Both terms are >= 0 (W <= 0), so
      // nothing cancels: a peaked row gives H ~ 0 accurately, a uniform one log V.
      entropy[r] = static_cast<float>(s.log_sum - s.weighted / s.sum);
      lse[r] = static_cast<float>(static_cast<double>(s.max) + s.log_sum);
    }
  }
}

// dlogprob/dz_k = onehot_k - p_k,  dH/dz_k = -p_k (log p_k + H),  dz/dx = 1/T. A null gradient is zero.
__global__ void logprob_entropy_backward_kernel(const float* logits, const int32_t* targets, const float* lse,
                                                const float* entropy, const float* glogprob, const float* gentropy,
                                                float* glogits, int64_t rows, int64_t vocab, float inv_temperature) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* x = logits + r * vocab;
    float* g = glogits + r * vocab;
    const int64_t t = targets[r];
    const float l = lse[r], h = entropy[r];
    const float a = glogprob ? ieee::mul(glogprob[r], inv_temperature) : 0.0f;
    const float b = gentropy ? ieee::mul(gentropy[r], inv_temperature) : 0.0f;
    for (int64_t k = threadIdx.x; k < vocab; k += blockDim.x)
      g[k] = k == t ? row_math::logprob_entropy_grad_target(x[k], inv_temperature, l, h, a, b)
                    : row_math::logprob_entropy_grad(x[k], inv_temperature, l, h, a, b);
  }
}

}  // namespace

}  // namespace gtpo::cuda
