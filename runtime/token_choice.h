// The sampler's token choice: which id a row of logits gives for a uniform u in [0, 1). One definition for
// every backend (the CPU's cpu_token_choice.cpp, CUDA's cuda_token_choice_kernels.cuh), built so that a
// GPU block of kTokenChoiceLanes threads computes it in parallel with the bits a host loop gets; the same
// logits and u give the same id on both.
//
// Over the ids [0, n) (n = TokenChoiceArgs::choice_ids), with z_k = x_k * (1 / T) in float:
//   key_k   the order of z_k as an unsigned integer (choice_key; -0 is +0, NaN lowest),
//   w_k     e^(z_k - m) by the shared float polynomial (choice_weight), m = max z; 0 for NaN.
//   Kept    the ids with key_k >= tau. tau starts at 0 (every id). top-k: tau = the k-th largest key (ties
//           at the boundary are kept, as Hugging Face's TopKLogitsWarper keeps them). top-p: tau = the
//           largest key >= that tau whose kept mass M(tau) reaches top_p * M(tau_k). M(tau) is the double
//           sum of the kept w_k in the lane order below, lanes combined by the CUDA block_sum's butterfly
//           (a monotone function of tau, so the largest such key is unique however it is searched for).
//   Lanes   lane t in [0, kTokenChoiceLanes) holds the ids t, t + L, t + 2L, ... in that order; its sum
//           L_t adds its kept w_k in double in that order.
//   Draw    C = L_0 + L_1 + ... (in lane order, double), target = u * C. The chosen lane is the first
//           whose running total exceeds target (the last lane with weight when u * C rounds up to C);
//           within it, starting from the lanes before it, the first kept id whose running total exceeds
//           target (else the lane's last kept id with weight). This is the inverse CDF of the kept
//           distribution with the ids in lane order, so P(k) = w_k / C.
//   Degenerate  C == 0 (every kept weight 0: NaN or infinite logits): the id of the largest key, lowest
//           on ties. Temperature 0 (greedy): the same over x itself.
// u comes from the counters (seed, prompt id, sample index, position) in model/sampler.cpp, so a row's
// draw never depends on the batch around it or on the thread that makes it.
#pragma once
#include <cstdint>
#include <cstring>

#include "runtime/exp_poly.h"  // first: defines GTPO_HD for a host compiler
//
#include "runtime/elementwise_math.h"

namespace gtpo::token_choice {

constexpr int kTokenChoiceLanes = 256;  // the CUDA kernel's block size; the CPU loops lane by lane

// An order-preserving map of a float to an unsigned integer: a < b iff key(a) < key(b) for non-NaN
// values; -0 and +0 share one key; NaN gets 0 (below -inf's key, so never kept ahead of a number).
GTPO_HD uint32_t choice_key(float z) {
  if (z != z) return 0u;
  const float v = z == 0.0f ? 0.0f : z;
  uint32_t bits;
#ifdef __CUDA_ARCH__
  bits = __float_as_uint(v);
#else
  std::memcpy(&bits, &v, sizeof bits);
#endif
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// w = e^(z - m) for m the row's largest z (so w <= 1); 0 where z - m is NaN (a NaN logit, or inf - inf).
GTPO_HD float choice_weight(float z, float m) {
  const float d = gtpo::cuda::ieee::sub(z, m);
  return d == d ? elementwise::exp_any(d) : 0.0f;
}

// The draw's first stage (above, "Draw"), over the kTokenChoiceLanes lane sums: the chosen lane (-1 when
// C == 0), the running total of the lanes before it and the target u * C, each sum in lane order.
struct LaneChoice {
  int lane = -1;
  double before = 0.0, target = 0.0;
};
GTPO_HD LaneChoice choose_lane(const double* lanes, double u) {
  using gtpo::cuda::ieee::add;
  double total = 0.0;
  int last_with_weight = -1;
  for (int t = 0; t < kTokenChoiceLanes; ++t) {
    total = add(total, lanes[t]);
    if (lanes[t] > 0.0) last_with_weight = t;
  }
  LaneChoice c;
  if (!(total > 0.0)) return c;
  c.target = gtpo::cuda::ieee::mul(u, total);
  for (int t = 0; t < kTokenChoiceLanes && c.lane < 0; ++t) {
    const double next = add(c.before, lanes[t]);
    if (c.target < next)
      c.lane = t;
    else
      c.before = next;
  }
  if (c.lane < 0) {  // u * C rounded up to C: the last lane with weight
    c.lane = last_with_weight;
    c.before = 0.0;
    for (int t = 0; t < c.lane; ++t) c.before = add(c.before, lanes[t]);
  }
  return c;
}

}  // namespace gtpo::token_choice
