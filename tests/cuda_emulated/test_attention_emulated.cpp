// The CUDA attention kernels (runtime/cuda/cuda_attention_*.cuh) checked without a GPU: emu.h runs each
// thread block as 128 fibers with real __syncthreads and warp-shuffle semantics, in each of its thread orders
// (forward, reverse, random, warps run ahead; results must be bitwise identical across them, which catches
// missing barriers), with shared memory and unused cache rows poisoned with NaN. Each case is compared with a direct
// double-precision evaluation of the contract in runtime/backend.h; KV-cache cases must also equal the same
// problem with a dense k/v bit for bit. What this cannot show: speed, occupancy, real memory-model races
// beyond the orders tried. Usage: test_cuda_attention_emulated [case index].
#include "emu.h"

namespace gtpo::cuda::attn {
inline float* dynamic_smem() { return reinterpret_cast<float*>(emu::smem.data()); }
}  // namespace gtpo::cuda::attn

#include "runtime/cuda/cuda_attention_backward.cuh"
#include "runtime/cuda/cuda_attention_forward.cuh"

// The executor the attention launch plans run on (cuda_attention.cu's StreamExec on the device): 128-thread
// blocks, up to 99 KB of dynamic shared memory (the plans raise the limit), scratch poisoned with NaN.
struct EmuExec {
  std::vector<std::vector<float>> scratches;
  size_t max_smem = 0;
  long long launches = 0;
  void* scratch(size_t bytes) {
    scratches.emplace_back(std::max<size_t>(bytes / 4, 0), std::numeric_limits<float>::quiet_NaN());
    return scratches.back().data();
  }
  template <typename... P, typename... A>
  void launch(void (*kernel)(P...), int64_t blocks, size_t smem_bytes, A&&... args) {
    if (blocks <= 0) return;
    ++launches;
    max_smem = std::max(max_smem, smem_bytes);
    emu::Launch l;
    l.grid_x = unsigned(blocks);
    l.threads = gtpo::cuda::attn::kThreads;
    l.smem_bytes = smem_bytes;
    l.max_smem = 99 * 1024;
    emu::launch(kernel, l, std::forward<A>(args)...);
  }
};
#include <cstdint>
#include <string>
#include <cinttypes>

using gtpo::cuda::attn::Geom;
static const float NaN = std::numeric_limits<float>::quiet_NaN();

struct Case {
  int64_t B, Tq, Tk, Hq, Hkv, D, cache;  // cache >= Tk: k/v rows strided by cache (0: dense)
  int mask;                              // 0 none, 1 left padding, 2 left padding + batch 0 fully masked
  float amp;
  bool backward;
};

struct Ref { std::vector<double> out, lse, gq, gk, gv; };

// Direct formula in double from the spec in runtime/backend.h.
Ref reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
              const std::vector<int32_t>& mask, const std::vector<float>& gout, float scale) {
  const int64_t rows_k = c.cache ? c.cache : c.Tk;
  Ref r;
  r.out.assign(c.B * c.Tq * c.Hq * c.D, 0);
  r.lse.assign(c.B * c.Hq * c.Tq, -INFINITY);
  r.gq.assign(c.B * c.Tq * c.Hq * c.D, 0);
  r.gk.assign(c.B * c.Tk * c.Hkv * c.D, 0);
  r.gv.assign(c.B * c.Tk * c.Hkv * c.D, 0);
  const int64_t group = c.Hq / c.Hkv, off = c.Tk - c.Tq;
  auto Q = [&](int64_t b, int64_t i, int64_t h, int64_t d) { return (double)q[((b * c.Tq + i) * c.Hq + h) * c.D + d]; };
  auto KI = [&](int64_t b, int64_t j, int64_t g, int64_t d) { return ((b * rows_k + j) * c.Hkv + g) * c.D + d; };
  auto GI = [&](int64_t b, int64_t j, int64_t g, int64_t d) { return ((b * c.Tk + j) * c.Hkv + g) * c.D + d; };
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Tq; ++i) {
        const int64_t g = h / group;
        std::vector<double> s(c.Tk, -INFINITY);
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.Tk; ++j) {
          if (j > i + off || (!mask.empty() && mask[b * c.Tk + j] == 0)) continue;
          double acc = 0;
          for (int64_t d = 0; d < c.D; ++d) acc += (double)scale * Q(b, i, h, d) * k[KI(b, j, g, d)];
          s[j] = acc;
          mx = std::max(mx, acc);
        }
        if (mx == -INFINITY) continue;
        double sum = 0;
        for (int64_t j = 0; j < c.Tk; ++j) sum += s[j] == -INFINITY ? 0 : std::exp(s[j] - mx);
        std::vector<double> p(c.Tk);
        for (int64_t j = 0; j < c.Tk; ++j) p[j] = s[j] == -INFINITY ? 0 : std::exp(s[j] - mx) / sum;
        const int64_t oi = ((b * c.Tq + i) * c.Hq + h) * c.D;
        for (int64_t d = 0; d < c.D; ++d) {
          double a = 0;
          for (int64_t j = 0; j < c.Tk; ++j) a += p[j] * v[KI(b, j, g, d)];
          r.out[oi + d] = a;
        }
        r.lse[(b * c.Hq + h) * c.Tq + i] = mx + std::log(sum);
        if (!c.backward) continue;
        double Di = 0;
        for (int64_t d = 0; d < c.D; ++d) Di += (double)gout[oi + d] * r.out[oi + d];
        for (int64_t j = 0; j < c.Tk; ++j) {
          if (p[j] == 0) continue;
          double dp = 0;
          for (int64_t d = 0; d < c.D; ++d) dp += (double)gout[oi + d] * v[KI(b, j, g, d)];
          const double ds = p[j] * (dp - Di);
          for (int64_t d = 0; d < c.D; ++d) {
            r.gv[GI(b, j, g, d)] += p[j] * gout[oi + d];
            r.gk[GI(b, j, g, d)] += ds * scale * Q(b, i, h, d);
            r.gq[oi + d] += ds * scale * k[KI(b, j, g, d)];
          }
        }
      }
  return r;
}

struct Got { std::vector<float> out, lse, gq, gk, gv; };

// A shared prompt prefix (AttentionArgs::prefix_*): [B / group, len, Hkv, D].
struct Prefix {
  std::vector<float> k, v;
  int64_t len = 0, group = 1;
};

Got run(const Case& c, const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
        const std::vector<int32_t>& mask, const std::vector<float>& gout, float scale, int mode, size_t* smem,
        const Prefix* prefix = nullptr, const std::vector<int32_t>* kv_rows = nullptr) {
  emu::order_mode = mode;
  gtpo::AttentionArgs a;
  a.batch = c.B; a.q_len = c.Tq; a.kv_len = c.Tk; a.q_heads = c.Hq; a.kv_heads = c.Hkv; a.head_dim = c.D;
  a.kv_batch_stride = c.cache ? c.cache * c.Hkv * c.D : 0;
  a.scale = scale;
  a.key_mask = mask.empty() ? nullptr : mask.data();
  if (prefix) {
    a.prefix_k = prefix->k.data();
    a.prefix_v = prefix->v.data();
    a.prefix_len = prefix->len;
    a.prefix_group = prefix->group;
    a.prefix_batch_stride = prefix->len * c.Hkv * c.D;
  }
  if (kv_rows) a.kv_rows = kv_rows->data();
  Geom g = gtpo::cuda::attn::make_geom(a);
  Got r;
  r.out.assign(c.B * c.Tq * c.Hq * c.D, NaN);
  r.lse.assign(c.B * c.Hq * c.Tq, NaN);
  EmuExec ex;
  gtpo::cuda::attn::forward_plan(ex, g, q.data(), k.data(), v.data(), r.out.data(), r.lse.data());
  if (c.backward) {
    r.gq.assign(c.B * c.Tq * c.Hq * c.D, NaN);
    r.gk.assign(c.B * c.Tk * c.Hkv * c.D, NaN);
    r.gv.assign(c.B * c.Tk * c.Hkv * c.D, NaN);
    gtpo::cuda::attn::backward_plan(ex, g, q.data(), k.data(), v.data(), r.out.data(), r.lse.data(), gout.data(),
                                    r.gq.data(), r.gk.data(), r.gv.data());
  }
  *smem = std::max(*smem, ex.max_smem);
  return r;
}

double maxerr(const std::vector<float>& got, const std::vector<double>& want, double* scale_out) {
  double e = 0, sc = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    sc = std::max(sc, std::abs(want[i]));
    if (std::isinf(want[i])) {
      if (!(got[i] == want[i])) return INFINITY;
      continue;
    }
    const double d = std::abs((double)got[i] - want[i]);
    if (!(d == d)) return INFINITY;
    e = std::max(e, d);
  }
  *scale_out = sc;
  return e;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

int main(int argc, char** argv) {
  std::vector<Case> cases = {
    // training shapes (q_len == kv_len)
    {2, 150, 150, 4, 2, 64, 0, 1, 2.0f, true},
    {1, 70, 70, 2, 2, 128, 0, 0, 2.0f, true},
    {2, 40, 40, 4, 1, 16, 0, 2, 2.0f, true},
    {1, 33, 33, 2, 1, 32, 0, 1, 1.0f, true},
    {1, 45, 45, 2, 2, 3, 0, 1, 3.0f, true},
    {1, 37, 37, 2, 1, 80, 0, 1, 2.0f, true},
    {1, 35, 35, 1, 1, 200, 0, 0, 2.0f, true},
    {1, 33, 33, 2, 2, 256, 0, 1, 1.0f, true},
    {2, 16, 16, 4, 2, 64, 0, 1, 2.0f, true},   // decode-path forward, tiled backward
    {2, 5, 5, 2, 1, 128, 0, 2, 2.0f, true},
    {1, 1, 1, 1, 1, 64, 0, 0, 1.0f, true},
    {1, 17, 17, 2, 1, 48, 0, 0, 2.0f, true},
    {2, 70, 90, 4, 2, 16, 0, 1, 2.0f, true},   // the cross-backend test's shape (q_len < kv_len)
    // KV-cache shapes: k/v strided by a larger cache, unused rows NaN
    {2, 1, 13, 4, 2, 64, 20, 1, 2.0f, false},
    {2, 3, 13, 4, 2, 128, 20, 1, 2.0f, false},
    {2, 1, 600, 4, 2, 64, 640, 1, 2.0f, false},
    {1, 1, 1100, 2, 1, 128, 1200, 1, 2.0f, false},
    {3, 2, 1500, 4, 1, 64, 1500, 3, 2.0f, false},
    {3, 150, 150, 2, 1, 64, 0, 3, 2.0f, true},
    {2, 100, 100, 2, 2, 128, 0, 3, 2.0f, true},
    {1, 2, 1030, 2, 2, 96, 1100, 0, 2.0f, false},
    {1, 16, 530, 2, 1, 64, 600, 1, 2.0f, false},
    {1, 20, 90, 2, 1, 64, 100, 1, 2.0f, false},
    {1, 1, 700, 1, 1, 256, 800, 1, 1.0f, false},
    {2, 1, 1, 2, 1, 128, 20, 1, 1.0f, false},
    // empty ranges
    {2, 0, 5, 2, 1, 4, 0, 0, 1.0f, true},
    {2, 3, 0, 2, 1, 4, 0, 0, 1.0f, true},
    {0, 3, 3, 2, 1, 4, 0, 0, 1.0f, true},
  };
  int failures = 0;
  const int only = argc > 1 ? atoi(argv[1]) : -1;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    if (only >= 0 && (int)ci != only) continue;
    const Case& c = cases[ci];
    std::mt19937 rng(1234 + ci);
    std::uniform_real_distribution<float> U(-1.0f, 1.0f);
    const int64_t rows_k = c.cache ? c.cache : c.Tk;
    std::vector<float> q(c.B * c.Tq * c.Hq * c.D), k(c.B * rows_k * c.Hkv * c.D), v(k.size()), gout(q.size());
    for (auto& x : q) x = c.amp * U(rng);
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < rows_k; ++j)
        for (int64_t e = 0; e < c.Hkv * c.D; ++e) {
          const size_t idx = (b * rows_k + j) * c.Hkv * c.D + e;
          k[idx] = j < c.Tk ? c.amp * U(rng) : NaN;
          v[idx] = j < c.Tk ? U(rng) : NaN;
        }
    for (auto& x : gout) x = U(rng);
    std::vector<int32_t> mask;
    if (c.mask) {
      mask.assign(c.B * c.Tk, 1);
      for (int64_t b = 0; b < c.B; ++b) {
        const int64_t pad = (c.mask == 2 && b == 0) ? c.Tk : c.mask == 3 ? (b == 0 ? c.Tk * 2 / 3 : b == 1 ? c.Tk : 1) : std::min<int64_t>(c.Tk, (b * 3 + 2) % 7);
        for (int64_t j = 0; j < pad; ++j) mask[b * c.Tk + j] = 0;
      }
    }
    const float scale = 1.0f / std::sqrt((float)std::max<int64_t>(c.D, 1));
    size_t smem = 0;
    emu::switches = 0;
    Got g0 = run(c, q, k, v, mask, gout, scale, 0, &smem);
    bool det = true;
    for (int mode = 1; mode < emu::kOrders; ++mode) {
      Got g = run(c, q, k, v, mask, gout, scale, mode, &smem);
      det = det && same_bits(g0.out, g.out) && same_bits(g0.lse, g.lse) && same_bits(g0.gq, g.gq) &&
            same_bits(g0.gk, g.gk) && same_bits(g0.gv, g.gv);
    }
    bool dense_same = true;
    if (c.cache) {  // the same problem with k, v copied to dense [B, Tk, Hkv, D]: bitwise the same forward
      Case cd = c;
      cd.cache = 0;
      std::vector<float> kd, vd;
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t j = 0; j < c.Tk; ++j)
          for (int64_t e = 0; e < c.Hkv * c.D; ++e) {
            kd.push_back(k[(b * rows_k + j) * c.Hkv * c.D + e]);
            vd.push_back(v[(b * rows_k + j) * c.Hkv * c.D + e]);
          }
      Got gd = run(cd, q, kd, vd, mask, gout, scale, 2, &smem);
      dense_same = same_bits(gd.out, g0.out) && same_bits(gd.lse, g0.lse);
    }
    bool prefix_same = true;
    if (c.cache && c.B > 0 && c.Tk > 0) {
      // The shared-prefix forward against the prefix copied into every row: the rows' own positions below
      // the prefix are NaN, so reading them would show. Same decode kernel on both sides (q_len <= 16):
      // bitwise; otherwise the copy takes the tiled kernel: within 2e-6.
      Prefix pre;
      pre.group = c.B % 2 == 0 ? 2 : 1;
      pre.len = std::max<int64_t>(1, c.Tk / 2);
      const int64_t row = c.Hkv * c.D;
      std::vector<float> kc = k, vc = v, kn = k, vn = v;
      for (int64_t e = 0; e < c.B / pre.group; ++e)
        for (int64_t x = 0; x < pre.len * row; ++x) {
          pre.k.push_back(k[(e * pre.group) * rows_k * row + x]);
          pre.v.push_back(v[(e * pre.group) * rows_k * row + x]);
        }
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t x = 0; x < pre.len * row; ++x) {
          kc[b * rows_k * row + x] = pre.k[(b / pre.group) * pre.len * row + x];
          vc[b * rows_k * row + x] = pre.v[(b / pre.group) * pre.len * row + x];
          kn[b * rows_k * row + x] = vn[b * rows_k * row + x] = NaN;
        }
      Got copied = run(c, q, kc, vc, mask, gout, scale, 2, &smem);
      Got shared = run(c, q, kn, vn, mask, gout, scale, 1, &smem, &pre);
      double s6, s7;
      prefix_same = c.Tq <= 16 ? same_bits(copied.out, shared.out) && same_bits(copied.lse, shared.lse)
                               : maxerr(shared.out, std::vector<double>(copied.out.begin(), copied.out.end()), &s6) < 2e-6 &&
                                     maxerr(shared.lse, std::vector<double>(copied.lse.begin(), copied.lse.end()), &s7) < 2e-6;
    }
    bool rows_same = true;
    if (c.cache && c.B > 0 && c.Tk > 0) {
      // kv_rows (a decode batch that lost its finished rows): entries B-1, ..., 1 (entry 0 left out when
      // there are others), each reading its own cache entry, equal those entries' rows of the full batch:
      // bitwise where the full batch takes the decode kernel too (q_len <= 16), else within 2e-6.
      std::vector<int32_t> rows;
      for (int64_t b = c.B - 1; b >= (c.B > 1 ? 1 : 0); --b) rows.push_back(static_cast<int32_t>(b));
      Case cr = c;
      cr.B = static_cast<int64_t>(rows.size());
      cr.backward = false;
      const int64_t q_entry = c.Tq * c.Hq * c.D;
      std::vector<float> qr, want_out, want_lse;
      std::vector<int32_t> mr;
      for (int32_t b : rows) {
        qr.insert(qr.end(), q.begin() + b * q_entry, q.begin() + (b + 1) * q_entry);
        want_out.insert(want_out.end(), g0.out.begin() + b * q_entry, g0.out.begin() + (b + 1) * q_entry);
        want_lse.insert(want_lse.end(), g0.lse.begin() + b * c.Hq * c.Tq,
                        g0.lse.begin() + (b + 1) * c.Hq * c.Tq);
        if (!mask.empty()) mr.insert(mr.end(), mask.begin() + b * c.Tk, mask.begin() + (b + 1) * c.Tk);
      }
      Got sub = run(cr, qr, k, v, mr, gout, scale, 3, &smem, nullptr, &rows);
      double s8, s9;
      rows_same =
          c.Tq <= 16 ? same_bits(sub.out, want_out) && same_bits(sub.lse, want_lse)
                     : maxerr(sub.out, std::vector<double>(want_out.begin(), want_out.end()), &s8) < 2e-6 &&
                           maxerr(sub.lse, std::vector<double>(want_lse.begin(), want_lse.end()), &s9) < 2e-6;
      // ops::detail::attention_cached_every_row, the way without kv_rows: the full batch with every entry
      // not in rows taking the first row's query and mask; the rows' outputs are the full batch's bits.
      std::vector<float> q_every;
      std::vector<int32_t> m_every;
      for (int64_t e = 0; e < c.B; ++e) {
        const auto at = std::find(rows.begin(), rows.end(), static_cast<int32_t>(e));
        const int64_t b = at == rows.end() ? 0 : at - rows.begin();
        q_every.insert(q_every.end(), qr.begin() + b * q_entry, qr.begin() + (b + 1) * q_entry);
        if (!mr.empty()) m_every.insert(m_every.end(), mr.begin() + b * c.Tk, mr.begin() + (b + 1) * c.Tk);
      }
      Case ce = c;
      ce.backward = false;
      const Got every = run(ce, q_every, k, v, m_every, gout, scale, 0, &smem);
      std::vector<float> every_out, every_lse;
      for (int32_t b : rows) {
        every_out.insert(every_out.end(), every.out.begin() + b * q_entry,
                         every.out.begin() + (b + 1) * q_entry);
        every_lse.insert(every_lse.end(), every.lse.begin() + b * c.Hq * c.Tq,
                         every.lse.begin() + (b + 1) * c.Hq * c.Tq);
      }
      rows_same = rows_same && same_bits(every_out, want_out) && same_bits(every_lse, want_lse);
    }
    Ref r = reference(c, q, k, v, mask, gout, scale);
    double s1, s2, s3, s4, s5;
    const double eo = maxerr(g0.out, r.out, &s1), el = maxerr(g0.lse, r.lse, &s2);
    double eq = 0, ek = 0, ev = 0;
    if (c.backward) { eq = maxerr(g0.gq, r.gq, &s3); ek = maxerr(g0.gk, r.gk, &s4); ev = maxerr(g0.gv, r.gv, &s5); }
    const bool ok = det && dense_same && prefix_same && rows_same && eo < 2e-5 && el < 2e-5 && eq < 1e-4 &&
                    ek < 1e-4 && ev < 1e-4;
    failures += !ok;
    printf("%s case %2zu B=%" PRId64 " Tq=%" PRId64 " Tk=%" PRId64 " Hq=%" PRId64 " Hkv=%" PRId64
           " D=%" PRId64 " cache=%" PRId64
           " mask=%d dense=%d prefix=%d rows=%d | out %.1e lse %.1e gq %.1e gk %.1e gv %.1e | det %d | smem "
           "%zu | sw %lld\n",
           ok ? "ok  " : "FAIL", ci, c.B, c.Tq, c.Tk, c.Hq, c.Hkv, c.D, c.cache, c.mask, (int)dense_same,
           (int)prefix_same, (int)rows_same, eo, el, eq, ek, ev, (int)det, smem, emu::switches);
    fflush(stdout);
  }
  printf("%d failures\n", failures);
  return failures != 0;
}
