// The harness of the emulated kernel tests (test_kernels_emulated.cpp, test_token_choice_emulated.cpp): a
// case runs on the CPU backend and on an emulated CUDA backend in each of emu.h's thread orders; every order
// must give the same bits, and the outputs the CPU's bits (tol < 0) or a normwise error within tol.
#pragma once
#include "emu.h"  // first: it defines what the kernel headers expect of CUDA
//
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/cpu/cpu_backend.h"

inline const float kNaN = std::numeric_limits<float>::quiet_NaN();
inline const float kInf = std::numeric_limits<float>::infinity();

// A launch as the .cu files make it: grid gx x gy, `threads` per block, `smem` dynamic shared bytes.
template <typename... P, typename... A>
void emu_launch(void (*kernel)(P...), unsigned gx, unsigned gy, int threads, size_t smem, A&&... args) {
  emu::Launch l;
  l.grid_x = gx;
  l.grid_y = gy;
  l.threads = threads;
  l.smem_bytes = smem;
  emu::launch(kernel, l, std::forward<A>(args)...);
}

// ---- the harness ----------------------------------------------------------------------------------
using Outs = std::vector<std::vector<double>>;  // a case's outputs, floats widened exactly

inline std::vector<double> D(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }
inline std::vector<float> poisoned(size_t n) { return std::vector<float>(n, kNaN); }

inline std::mt19937 rng(20240611);
inline std::vector<float> uniform(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> U(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = U(rng);
  return v;
}
inline std::vector<int32_t> ints(size_t n, int32_t lo, int32_t hi) {
  std::uniform_int_distribution<int32_t> U(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = U(rng);
  return v;
}

inline bool same_bits(const Outs& a, const Outs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() ||
        (!a[i].empty() && std::memcmp(a[i].data(), b[i].data(), a[i].size() * 8)))
      return false;
  return true;
}

// Largest normwise error over the outputs; infinite when sizes or non-finite values disagree.
inline double normwise_error(const Outs& got, const Outs& want) {
  if (got.size() != want.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].size() != want[i].size()) return INFINITY;
    double scale = 0, err = 0;
    for (size_t j = 0; j < got[i].size(); ++j) {
      const double g = got[i][j], w = want[i][j];
      if (!std::isfinite(w) || !std::isfinite(g)) {
        if (!(g == w || (std::isnan(g) && std::isnan(w)))) return INFINITY;
        continue;
      }
      scale = std::max(scale, std::abs(w));
      err = std::max(err, std::abs(g - w));
    }
    worst = std::max(worst, scale > 0 ? err / scale : err);
  }
  return worst;
}

inline int failures = 0, cases = 0;
inline const char* filter = nullptr;
inline std::string family;

// Runs f on the CPU backend and on the emulation in every thread order. tol < 0: the outputs must be the
// CPU's bits; otherwise the normwise error must be at most tol. Either way all orders must agree bitwise.
template <typename Emu, typename F>
void check_on(const std::string& what, double tol, F&& f) {
  const std::string name = family + ": " + what;
  if (filter && name.find(filter) == std::string::npos) return;
  ++cases;
  const auto t0 = std::chrono::steady_clock::now();
  const Outs want = f(gtpo::cpu_backend());
  Outs got[emu::kOrders];
  bool det = true;
  for (int mode = 0; mode < emu::kOrders; ++mode) {
    emu::order_mode = mode;
    emu::rng.seed(7 + mode);
    Emu be;
    got[mode] = f(be);
    det &= same_bits(got[0], got[mode]);
  }
  const bool bitwise = same_bits(got[0], want);
  const double err = normwise_error(got[0], want);
  const bool ok = det && (tol < 0 ? bitwise : err <= tol);
  failures += !ok;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  char tol_text[32];
  snprintf(tol_text, sizeof tol_text, tol < 0 ? "bits" : "%.0e", tol);
  printf("%s %-58s err %.1e%s, tol %s | orders %s | %.0f ms\n", ok ? "ok  " : "FAIL", name.c_str(), err,
         bitwise ? " (bitwise)" : "", tol_text, det ? "same" : "DIFFER", ms);
  fflush(stdout);
}
