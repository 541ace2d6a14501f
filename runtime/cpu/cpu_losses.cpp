// Losses over a vocabulary: cross-entropy, and the fused token log-prob + entropy used by RL.
//
// Each row takes two passes over its logits in forward (the max m of z = x * scale, then e^(z - m) with
// its sums) and one in backward (p recomputed from the saved lse).
// Sums are accumulated in double in a fixed order: blocks of kBlock elements, each element added into
// lane (index mod kLanes), lanes combined in lane order at the end. The order depends only on the vocab
// size, and rows run in parallel (one row is never split), so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/cpu/cpu_vec_math.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

namespace {

constexpr int64_t kBlock = 256;
constexpr int kLanes = 8;

struct RowSums {
  float max = 0.0f;         // m = max_k z_k
  double log_sum = 0.0;     // log S, S = sum_k e^(z_k - m)
  double sum = 0.0;         // S
  double weighted = 0.0;    // W = sum_k e^(z_k - m) (z_k - m)   (only with kWeighted)
};

// z_k = x_k * scale. scale > 0, so max_k fl(x_k * scale) == fl(max_k x_k * scale): the max pass skips the
// multiply. The buffers let the exp loop vectorise apart from the double accumulation.
//
// The terms with z_k == m (each exactly 1) are counted apart from the rest: S = c + R, log S =
// log c + log1p(R / c). In a peaked row R can be ~1e-13, and 1 + R in double would keep only a few of its
// digits, which is all of log S, of log p at the peak and a share of H.
template <bool kWeighted>
RowSums row_sums(const float* x, int64_t n, float scale) {
  RowSums out;
  out.max = cpu_math::max_of(x, n) * scale;
  alignas(64) float d[kBlock], e[kBlock], at_max[kBlock];
  double rest[kLanes] = {}, count[kLanes] = {}, w[kLanes] = {};
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t len = std::min(kBlock, n - b);
    for (int64_t k = 0; k < len; ++k) d[k] = x[b + k] * scale - out.max;
    // e^0 is exactly 1, so e - at_max removes the max terms from `rest`. A NaN is not at the max: it
    // reaches `rest` and the output.
    for (int64_t k = 0; k < len; ++k) {
      at_max[k] = d[k] == 0.0f ? 1.0f : 0.0f;
      e[k] = cpu_math::exp_bounded(d[k]);
    }
    // Padding to whole lanes adds exact zeros (every lane's sum is unchanged by + 0.0), so the loop below
    // stops at the last lane group in use rather than at kBlock: a 20-token vocabulary takes 24 slots, not
    // 256, with the same bits.
    const int64_t used = (len + kLanes - 1) / kLanes * kLanes;
    for (int64_t k = len; k < used; ++k) d[k] = e[k] = at_max[k] = 0.0f;
    for (int64_t k = 0; k < used; k += kLanes)
      for (int j = 0; j < kLanes; ++j) {
        rest[j] += static_cast<double>(e[k + j] - at_max[k + j]);
        count[j] += static_cast<double>(at_max[k + j]);
        if constexpr (kWeighted) w[j] += static_cast<double>(e[k + j]) * static_cast<double>(d[k + j]);
      }
  }
  double r = 0.0, c = 0.0;
  for (int j = 0; j < kLanes; ++j) {
    r += rest[j];
    c += count[j];
    out.weighted += w[j];
  }
  out.sum = c + r;
  out.log_sum = std::log(c) + std::log1p(r / c);
  return out;
}

// Rows per parallel chunk: about 32k logits' worth each, never splitting a row. A logit costs an exp and
// double sums, about eight elementwise operations, so a decode step's 128 rows of a small vocabulary are
// split too, not left to one thread.
int64_t row_grain(int64_t vocab) { return grain_for(8 * vocab); }

}  // namespace

void CpuBackend::cross_entropy_forward(const float* logits, const int32_t* targets, float* loss, float* lse,
                                       int64_t rows, int64_t vocab, int32_t ignore_index) {
  GTPO_PRIMITIVE("cross_entropy_forward");
  parallel_for(rows, row_grain(vocab), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const int32_t t = targets[r];
      if (t == ignore_index) {
        loss[r] = 0.0f;
        lse[r] = 0.0f;
        continue;
      }
      const float* x = logits + r * vocab;
      const RowSums s = row_sums<false>(x, vocab, 1.0f);
      const double log_sum = s.log_sum;
      // loss = lse - x_t = log S - (x_t - m); x_t - m is exact in double.
      loss[r] = static_cast<float>(log_sum - (static_cast<double>(x[t]) - s.max));
      lse[r] = static_cast<float>(s.max + log_sum);
    }
  });
}

void CpuBackend::cross_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                                        const float* grow, float* glogits, int64_t rows, int64_t vocab,
                                        int32_t ignore_index) {
  GTPO_PRIMITIVE("cross_entropy_backward");
  parallel_for(rows, row_grain(vocab), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      float* g = glogits + r * vocab;
      const int32_t t = targets[r];
      if (t == ignore_index) {
        for (int64_t k = 0; k < vocab; ++k) g[k] = 0.0f;
        continue;
      }
      const float* x = logits + r * vocab;
      const float l = lse[r], gr = grow[r];
      for (int64_t k = 0; k < vocab; ++k) g[k] = gr * cpu_math::exp_bounded(x[k] - l);
      // p_t - 1 = expm1(log p_t): exact where p_t is close to 1.
      g[t] = static_cast<float>(static_cast<double>(gr) * std::expm1(static_cast<double>(x[t]) - l));
    }
  });
}

void CpuBackend::logprob_entropy_forward(const float* logits, const int32_t* targets, float* logprob,
                                         float* entropy, float* lse, int64_t rows, int64_t vocab,
                                         float inv_temperature) {
  GTPO_PRIMITIVE("logprob_entropy_forward");
  parallel_for(rows, row_grain(vocab), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* x = logits + r * vocab;
      const RowSums s = row_sums<true>(x, vocab, inv_temperature);
      const double log_sum = s.log_sum;
      const float zt = x[targets[r]] * inv_temperature;
      logprob[r] = static_cast<float>((static_cast<double>(zt) - s.max) - log_sum);
      // H = -sum p log p with log p = (z - m) - log S:  H = log S - W / S. Both terms are >= 0 (W <= 0),
      // so nothing cancels: a peaked row gives H ~ 0 accurately, a uniform one log V.
      entropy[r] = static_cast<float>(log_sum - s.weighted / s.sum);
      lse[r] = static_cast<float>(s.max + log_sum);
    }
  });
}

void CpuBackend::logprob_entropy_backward(const float* logits, const int32_t* targets, const float* lse,
                                          const float* entropy, const float* glogprob, const float* gentropy,
                                          float* glogits, int64_t rows, int64_t vocab, float inv_temperature) {
  GTPO_PRIMITIVE("logprob_entropy_backward");
  // dlogprob/dz_k = onehot_k - p_k,  dH/dz_k = -p_k (log p_k + H),  dz/dx = 1/T.
  parallel_for(rows, row_grain(vocab), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const float* x = logits + r * vocab;
      float* g = glogits + r * vocab;
      const float l = lse[r], h = entropy[r];
      const float a = glogprob ? glogprob[r] * inv_temperature : 0.0f;
      const float b = gentropy ? gentropy[r] * inv_temperature : 0.0f;
      const float inv_t = inv_temperature;  // a local, so the compiler need not reload it after each store
      for (int64_t k = 0; k < vocab; ++k) {
        const float lp = x[k] * inv_t - l;
        const float p = cpu_math::exp_bounded(lp);
        g[k] = -(a * p) - b * (p * (lp + h));
      }
      const int32_t t = targets[r];
      const double lpt = static_cast<double>(x[t] * inv_temperature) - l;
      // 1 - p_t = -expm1(log p_t): exact where p_t is close to 1.
      g[t] = static_cast<float>(-static_cast<double>(a) * std::expm1(lpt) -
                                static_cast<double>(b) * std::exp(lpt) * (lpt + h));
    }
  });
}

}  // namespace gtpo
