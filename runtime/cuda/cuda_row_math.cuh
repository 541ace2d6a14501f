// Per-element and per-row formulas of the row-wise kernels (softmax, norms, RoPE, losses), written once for
// host and device so that a host program can check them against the CPU backend's expressions.
//
// nvcc fuses a*b + c into one FMA by default; the CPU build forbids that (-ffp-contract=off). The ieee::
// helpers (cuda_ieee.cuh) round every operation on the device too, so given the same row statistics these
// formulas give the CPU's bits. It matters beyond the last ulp in one place: fused, x*s - m at the row max is the
// rounding error of x*s instead of 0, and the losses' "terms at the max" count would miss the max.
#pragma once
#include <cmath>
#include <cstdint>

#include "runtime/cuda/cuda_ieee.cuh"

namespace gtpo::cuda::row_math {

// e^x flushed to 0 below -87 like the CPU's exp_bounded (so a far-off logit gets exactly 0, not a
// denormal); NaN stays NaN. The exp itself is the device's expf, within 2 ulp of the CPU polynomial.
__host__ __device__ __forceinline__ float exp_flushed(float x) { return x < -87.0f ? 0.0f : ::expf(x); }

// ---- softmax -----------------------------------------------------------------------------------
// gx for softmax: y (gy - dot), dot = sum gy y.
__host__ __device__ __forceinline__ float softmax_grad(float y, float gy, float dot) {
  return ieee::mul(y, ieee::sub(gy, dot));
}
// gx for log_softmax: gy - e^y sum(gy).
__host__ __device__ __forceinline__ float log_softmax_grad(float y, float gy, float sum_gy) {
  return ieee::sub(gy, ieee::mul(::expf(y), sum_gy));
}

// ---- norms -------------------------------------------------------------------------------------
// 1 / sqrt(var + eps) in double, rounded once (var is the biased variance, or the mean square for RMSNorm).
__host__ __device__ __forceinline__ float norm_rstd(double var, float eps) {
  return static_cast<float>(1.0 / ::sqrt(ieee::add(var, static_cast<double>(eps))));
}
__host__ __device__ __forceinline__ float layer_norm_xhat(float x, float mean, float rstd) {
  return ieee::mul(ieee::sub(x, mean), rstd);
}
__host__ __device__ __forceinline__ float rms_norm_xhat(float x, float rstd) { return ieee::mul(x, rstd); }
// ((x - mean) rstd) w + b; has_bias=false leaves the + b out (it is not + 0: -0 would become +0).
__host__ __device__ __forceinline__ float layer_norm_out(float xhat, float w, float b, bool has_bias) {
  const float s = ieee::mul(xhat, w);
  return has_bias ? ieee::add(s, b) : s;
}
// LayerNorm gx = rstd ((g - a) - xhat b), g = gy w, a = mean(g), b = mean(g xhat).
__host__ __device__ __forceinline__ float layer_norm_grad(float g, float xhat, float a, float b, float rstd) {
  return ieee::mul(rstd, ieee::sub(ieee::sub(g, a), ieee::mul(xhat, b)));
}
// RMSNorm gx = rstd (g - xhat b), b = mean(g xhat).
__host__ __device__ __forceinline__ float rms_norm_grad(float g, float xhat, float b, float rstd) {
  return ieee::mul(rstd, ieee::sub(g, ieee::mul(xhat, b)));
}

// ---- RoPE --------------------------------------------------------------------------------------
// theta^(-2d/head_dim), in double like the CPU.
__host__ __device__ __forceinline__ double rope_inv_freq(int64_t d, int64_t head_dim, float theta) {
  return ::pow(static_cast<double>(theta), -2.0 * static_cast<double>(d) / static_cast<double>(head_dim));
}
// cos and (signed) sin of pos * inv_freq, formed in double and rounded once to float.
__host__ __device__ __forceinline__ void rope_cos_sin(int32_t pos, double inv_freq, bool inverse, float* c,
                                                      float* s) {
  const double angle = ieee::mul(static_cast<double>(pos), inv_freq);
  *c = static_cast<float>(::cos(angle));
  *s = static_cast<float>((inverse ? -1.0 : 1.0) * ::sin(angle));
}
// Hugging Face rotate_half on the pair (a, b) = (x[d], x[d + half]).
__host__ __device__ __forceinline__ void rope_rotate(float a, float b, float c, float s, float* lo, float* hi) {
  *lo = ieee::sub(ieee::mul(a, c), ieee::mul(b, s));
  *hi = ieee::add(ieee::mul(b, c), ieee::mul(a, s));
}

// ---- losses over a vocabulary ------------------------------------------------------------------
// One logit's share of the row sums, with d = z - m (z = x / T, m the row max of z):
//   at_max: 1 when d == 0 (its e^d is exactly 1), counted apart so that log S = log c + log1p(R / c) keeps
//           the digits of a tiny R in a peaked row;
//   rest:   e^d minus that 1;  weighted: e^d d (for the entropy).
struct LogitTerms {
  float d, e, at_max;
};
__host__ __device__ __forceinline__ LogitTerms logit_terms(float x, float scale, float max_z) {
  LogitTerms t;
  t.d = ieee::sub(ieee::mul(x, scale), max_z);
  t.at_max = t.d == 0.0f ? 1.0f : 0.0f;
  t.e = exp_flushed(t.d);
  return t;
}
// log S from the count of max terms c and the rest R.
__host__ __device__ __forceinline__ double log_sum_exp_shifted(double count, double rest) {
  return ieee::add(::log(count), ::log1p(rest / count));
}

// Cross-entropy gradient off the target: grow p_k, p_k = e^(x_k - lse).
__host__ __device__ __forceinline__ float cross_entropy_grad(float x, float lse, float grow) {
  return ieee::mul(grow, exp_flushed(ieee::sub(x, lse)));
}
// At the target: grow (p_t - 1) = grow expm1(x_t - lse), in double (exact where p_t is close to 1).
__host__ __device__ __forceinline__ float cross_entropy_grad_target(float x, float lse, float grow) {
  return static_cast<float>(
      ieee::mul(static_cast<double>(grow), ::expm1(ieee::sub(static_cast<double>(x), static_cast<double>(lse)))));
}

// Log-prob + entropy gradient off the target: -(a p) - b p (log p + H), with a = glogprob / T,
// b = gentropy / T and log p = x / T - lse.
__host__ __device__ __forceinline__ float logprob_entropy_grad(float x, float inv_t, float lse, float h, float a,
                                                               float b) {
  const float lp = ieee::sub(ieee::mul(x, inv_t), lse);
  const float p = exp_flushed(lp);
  return ieee::sub(-ieee::mul(a, p), ieee::mul(b, ieee::mul(p, ieee::add(lp, h))));
}
// At the target: -a expm1(log p_t) - b p_t (log p_t + H), in double.
__host__ __device__ __forceinline__ float logprob_entropy_grad_target(float x, float inv_t, float lse, float h,
                                                                      float a, float b) {
  const double lpt = ieee::sub(static_cast<double>(ieee::mul(x, inv_t)), static_cast<double>(lse));
  const double first = ieee::mul(-static_cast<double>(a), ::expm1(lpt));
  const double second = ieee::mul(ieee::mul(static_cast<double>(b), ::exp(lpt)), ieee::add(lpt, static_cast<double>(h)));
  return static_cast<float>(ieee::sub(first, second));
}

}  // namespace gtpo::cuda::row_math

namespace gtpo::cuda {

// Launch shape of a one-block-per-row kernel. The block size depends only on the row length, so the
// block reductions' order (and so their result) is a function of the problem size alone. Small rows get
// small blocks (rows are then many and occupancy comes from them); a 152k vocabulary row gets 1024 threads.
inline int row_threads(int64_t cols) {
  if (cols <= 1024) return 128;
  if (cols <= 4096) return 256;
  if (cols <= 16384) return 512;
  return 1024;
}
// Blocks for `rows` rows; the kernels loop r += gridDim.x over the rest.
inline unsigned row_grid(int64_t rows) {
  constexpr int64_t kMaxBlocks = 65535LL * 32;
  return static_cast<unsigned>(rows < kMaxBlocks ? rows : kMaxBlocks);
}

}  // namespace gtpo::cuda
