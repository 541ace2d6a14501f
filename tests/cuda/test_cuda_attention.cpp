// Attention parity, CPU against the device: the fused forward and backward over GQA, strided caches, key
// masks and q_len < kv_len, and the decode forward reading a shared prompt prefix.
//
// Tolerances (cuda_test.h's Tol): out and lse 1e-5, gradients 1e-4 (of max; dQ and dK also 1e-6 of their
// terms' scale, for gradients that are zero); under tf32/bf16, loose sanity bounds of the largest value.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "runtime/backend.h"
#include "tests/cuda/cuda_test.h"
#include "tests/cuda/primitive_buffers.h"
#include "tests/support/random.h"

using namespace gtpo;
using namespace gtpo::testing;

namespace {

// ---- attention -------------------------------------------------------------------------------------
struct AttnCase {
  int64_t batch, q_len, kv_len, q_heads, kv_heads, head_dim;
  int64_t capacity = 0;  // > kv_len: k and v rows live in a larger cache (kv_batch_stride)
  bool mask = false;     // random padding on the left of each row, one row masked entirely at the start
};

std::string attn_label(const AttnCase& c) {
  std::ostringstream os;
  os << "attention B=" << c.batch << " Tq=" << c.q_len << " Tk=" << c.kv_len << " Hq=" << c.q_heads
     << " Hkv=" << c.kv_heads << " D=" << c.head_dim << " capacity=" << c.capacity << (c.mask ? " masked" : "");
  return os.str();
}

struct AttnOut {
  std::vector<float> out, lse, gq, gk, gv;
};

AttnOut run_attention(const AttnCase& c, Device d, uint64_t seed) {
  const int64_t cap = c.capacity > 0 ? c.capacity : c.kv_len;
  const int64_t q_n = c.batch * c.q_len * c.q_heads * c.head_dim;
  const int64_t kv_n = c.batch * cap * c.kv_heads * c.head_dim;
  const int64_t kv_dense = c.batch * c.kv_len * c.kv_heads * c.head_dim;
  Tensor q = up(values(q_n, seed), d), k = up(values(kv_n, seed + 1), d), v = up(values(kv_n, seed + 2), d);
  AttentionArgs a;
  a.batch = c.batch;
  a.q_len = c.q_len;
  a.kv_len = c.kv_len;
  a.q_heads = c.q_heads;
  a.kv_heads = c.kv_heads;
  a.head_dim = c.head_dim;
  a.kv_batch_stride = c.capacity > 0 ? cap * c.kv_heads * c.head_dim : 0;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  Tensor mask;
  if (c.mask) {
    std::vector<int32_t> m(static_cast<size_t>(c.batch * c.kv_len), 1);
    TestRng rng(seed + 3);
    for (int64_t b = 0; b < c.batch; ++b) {
      // Row 0: the first half of the keys are padding, so early queries (when Tq == Tk) see no key at all.
      const int64_t pad = b == 0 ? c.kv_len / 2 : rng.integer(0, static_cast<int32_t>(std::max<int64_t>(1, c.kv_len / 3)));
      for (int64_t j = 0; j < pad; ++j) m[static_cast<size_t>(b * c.kv_len + j)] = 0;
      if (b == 1 && c.kv_len > 4) m[static_cast<size_t>(b * c.kv_len + c.kv_len - 2)] = 0;  // a hole, not only padding
    }
    mask = up_ints(m, d);
    a.key_mask = mask.data_i32();
  }
  Tensor out = out_buffer(q_n, d), lse = out_buffer(c.batch * c.q_heads * c.q_len, d);
  Backend& be = backend_for(d);
  be.attention_forward(a, q.data(), k.data(), v.data(), out.data(), lse.data());
  Tensor gout = up(values(q_n, seed + 4), d);
  Tensor gq = out_buffer(q_n, d), gk = out_buffer(kv_dense, d), gv = out_buffer(kv_dense, d);
  be.attention_backward(a, q.data(), k.data(), v.data(), out.data(), lse.data(), gout.data(), gq.data(), gk.data(),
                        gv.data());
  return {out.to_vector(), lse.to_vector(), gq.to_vector(), gk.to_vector(), gv.to_vector()};
}

}  // namespace

TEST_CASE("primitives: fused attention with GQA, cache strides, key masks and q_len < kv_len",
          "[cuda][primitives][attention]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "attention");
  const AttnCase cases[] = {
      {1, 1, 1, 1, 1, 8},
      {2, 33, 33, 4, 2, 32},                  // GQA 2:1, training shape
      {1, 31, 31, 1, 1, 16},
      {3, 5, 40, 6, 2, 64, 48, true},         // GQA 3:1, chunk of new queries over a strided cache, masked
      {2, 12, 12, 4, 4, 16, 0, true},         // prefill with left padding: early queries of row 0 see no key
      {2, 1, 1031, 2, 1, 128, 1100, true},    // one decode step over a long masked cache (MQA)
      {2, 64, 200, 12, 12, 64},               // q_len < kv_len, GPT-2 head size
      {1, 130, 130, 2, 2, 64},                // several query and key blocks
  };
  uint64_t seed = 9000;
  for (const AttnCase& c : cases) {
    seed += 10;
    const AttnOut ref = run_attention(c, Device::cpu, seed), got = run_attention(c, dev, seed);
    const std::string label = attn_label(c);
    check_close(label + " out", ref.out, got.out, Tol{1e-5, 1e-5});
    check_close(label + " lse", ref.lse, got.lse, Tol{1e-5, 1e-6});
    // dQ and dK go through dS = P (dP - D), a difference of two dot products of size about D |dO| |v|: where
    // the true gradient is zero (one visible key: P = 1, dP = D) the device's rounding of that difference is
    // all that is left, and "of max" would allow nothing. Their floor is 1e-6 of the scale of the terms
    // (inputs and dO lie in [-1, 1]): scale * D = sqrt(D) for a dot product of D terms, times P (summing
    // to 1 over the keys) and |k| or |q| <= 1.
    const double score_grad_scale = std::sqrt(static_cast<double>(c.head_dim));
    const std::vector<float> gq_floor(ref.gq.size(), static_cast<float>(score_grad_scale)),
        gk_floor(ref.gk.size(), static_cast<float>(score_grad_scale));
    check_close(label + " gq", ref.gq, got.gq, Tol{1e-4, 1e-4, 1e-6}, &gq_floor);
    check_close(label + " gk", ref.gk, got.gk, Tol{1e-4, 1e-4, 1e-6}, &gk_floor);
    check_close(label + " gv", ref.gv, got.gv, Tol{1e-4, 1e-4});
  }
  if (!is_stand_in(dev)) {
    // Attention under the speed modes (the GPU may round its matmuls too): still close to fp32. Loose
    // sanity bounds (of the largest value), not derived: scores carry the input rounding of q.k into the
    // softmax, then p.v is rounded again.
    for (MatmulPrecision p : {MatmulPrecision::tf32, MatmulPrecision::bf16}) {
      OptionsGuard guard(dev, {p, true});
      const double tol = p == MatmulPrecision::tf32 ? 1e-2 : 6e-2;
      const AttnCase& c = cases[3];
      const AttnOut ref = run_attention(c, Device::cpu, 77), got = run_attention(c, dev, 77);
      check_close(attn_label(c) + " out " + matmul_precision_name(p), ref.out, got.out, Tol{0.0, tol});
      check_close(attn_label(c) + " gq " + matmul_precision_name(p), ref.gq, got.gq, Tol{0.0, 3 * tol});
    }
  }
}

TEST_CASE("primitives: attention forward reading a shared prompt prefix (grouped decode)",
          "[cuda][primitives][attention]") {
  GTPO_CUDA_DEVICE_OR_SKIP(dev, "attention with a shared prefix");
  // 6 rows in groups of 3 share 2 prompts of 7 positions; each row has 12 positions (5 of its own).
  const int64_t B = 6, group = 3, Tp = 7, kv_len = 12, cap = 16, prefix_cap = 9, Hq = 4, Hkv = 2, D = 32;
  for (int64_t q_len : {int64_t{1}, int64_t{3}}) {
    auto run = [&](Device d) {
      const int64_t row = Hkv * D;
      Tensor q = up(values(B * q_len * Hq * D, 1), d), k = up(values(B * cap * row, 2), d),
             v = up(values(B * cap * row, 3), d), pk = up(values((B / group) * prefix_cap * row, 4), d),
             pv = up(values((B / group) * prefix_cap * row, 5), d);
      std::vector<int32_t> m(static_cast<size_t>(B * kv_len), 1);
      m[1] = 0;                      // row 0: a padded prompt position (in the prefix)
      m[static_cast<size_t>(kv_len + 9)] = 0;  // row 1: one of its own positions
      Tensor mask = up_ints(m, d);
      AttentionArgs a;
      a.batch = B;
      a.q_len = q_len;
      a.kv_len = kv_len;
      a.q_heads = Hq;
      a.kv_heads = Hkv;
      a.head_dim = D;
      a.kv_batch_stride = cap * row;
      a.scale = 1.0f / std::sqrt(static_cast<float>(D));
      a.key_mask = mask.data_i32();
      a.prefix_k = pk.data();
      a.prefix_v = pv.data();
      a.prefix_len = Tp;
      a.prefix_group = group;
      a.prefix_batch_stride = prefix_cap * row;
      Tensor out = out_buffer(B * q_len * Hq * D, d), lse = out_buffer(B * Hq * q_len, d);
      backend_for(d).attention_forward(a, q.data(), k.data(), v.data(), out.data(), lse.data());
      return std::vector<std::vector<float>>{out.to_vector(), lse.to_vector()};
    };
    const auto ref = run(Device::cpu), got = run(dev);
    check_close("prefix attention out, q_len " + std::to_string(q_len), ref[0], got[0], Tol{1e-5, 1e-5});
    check_close("prefix attention lse, q_len " + std::to_string(q_len), ref[1], got[1], Tol{1e-5, 1e-6});
  }
}
