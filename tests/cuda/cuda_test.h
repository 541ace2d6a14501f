// Shared by the CUDA suite (tests/cuda, CTest label "cuda"): which device a test runs on, tolerance-stated
// comparisons, and a guard for backend options.
//
// Every test starts with `GTPO_CUDA_DEVICE_OR_SKIP(dev, "what");`, which gives the device under test:
//  - CUDA when a GPU is visible to this build;
//  - otherwise the test WARNs "no CUDA device: skipped ..." and returns (it passes), unless
//  - GTPO_REQUIRE_CUDA=1 (set by scripts/gpu_check.sh on the GPU machine): then a missing GPU is a FAIL,
//    so a GPU run cannot pass by skipping;
//  - GTPO_CUDA_TESTS_ON_CPU=1: the CPU backend stands in for the device, so the test code itself runs (and
//    must pass, CPU against CPU) on a machine without a GPU. Parts that only make sense on a GPU (tf32/bf16)
//    then check that the CPU refuses them instead.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace gtpo::testing {

inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// Why backend_for(Device::cuda) is not available here, in its own words.
inline std::string cuda_missing_reason() {
  try {
    backend_for(Device::cuda);
    return "available";
  } catch (const Error& e) {
    return e.what();
  }
}

// The device under test, or nullopt when the test is to be skipped (after a WARN) or has failed.
inline std::optional<Device> cuda_device_under_test(const std::string& what) {
  const bool on_cpu = env_flag("GTPO_CUDA_TESTS_ON_CPU"), required = env_flag("GTPO_REQUIRE_CUDA");
  if (on_cpu && required) {
    FAIL("GTPO_REQUIRE_CUDA=1 and GTPO_CUDA_TESTS_ON_CPU=1 contradict each other (" << what << ")");
    return std::nullopt;
  }
  if (on_cpu) return Device::cpu;
  if (device_available(Device::cuda)) return Device::cuda;
  if (required) {
    FAIL("GTPO_REQUIRE_CUDA=1 but there is no CUDA device: " << what << " did not run (" << cuda_missing_reason()
                                                              << ")");
    return std::nullopt;
  }
  WARN("no CUDA device: skipped " << what << " (" << cuda_missing_reason() << ")");
  return std::nullopt;
}

#define GTPO_CUDA_DEVICE_OR_SKIP(var, what)                                              \
  const std::optional<::gtpo::Device> var##_opt = ::gtpo::testing::cuda_device_under_test(what); \
  if (!var##_opt) return;                                                                \
  const ::gtpo::Device var = *var##_opt

// True when the "device" is the CPU standing in (GTPO_CUDA_TESTS_ON_CPU=1).
inline bool is_stand_in(Device d) { return d == Device::cpu; }

// Sets a backend's options for one scope and restores the previous ones (even when a check fails).
class OptionsGuard {
 public:
  OptionsGuard(Device device, const BackendOptions& options)
      : backend_(backend_for(device)), saved_(backend_.options()) {
    backend_.configure(options);
  }
  ~OptionsGuard() {
    try {
      backend_.configure(saved_);
    } catch (...) {
    }
  }
  OptionsGuard(const OptionsGuard&) = delete;
  OptionsGuard& operator=(const OptionsGuard&) = delete;

 private:
  Backend& backend_;
  BackendOptions saved_;
};

// The tolerance of one comparison: element i of `got` may differ from `ref` by
//   rel * |ref_i| + norm * max_j |ref_j| + bound_rel * bound_i
// where bound_i (optional) is an error scale computed on the CPU, e.g. (|A| |B|)_ij for a GEMM or the sum
// of |x| for a reduction. Equal values (infinities included) and NaN against NaN always match.
struct Tol {
  double rel = 0.0;
  double norm = 0.0;
  double bound_rel = 0.0;
};

// One CHECK per array, with the worst element, its values and its allowance in the message.
inline void check_close(const std::string& what, const std::vector<float>& ref, const std::vector<float>& got,
                        const Tol& tol, const std::vector<float>* bound = nullptr) {
  INFO(what);
  REQUIRE(ref.size() == got.size());
  if (bound) REQUIRE(bound->size() == ref.size());
  double max_ref = 0.0;
  for (float r : ref)
    if (std::isfinite(r)) max_ref = std::max(max_ref, std::abs(static_cast<double>(r)));
  size_t bad = 0, worst = 0;
  double worst_ratio = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i], g = got[i];
    if (r == g || (std::isnan(r) && std::isnan(g))) continue;
    const double allowed = tol.rel * std::abs(r) + tol.norm * max_ref + (bound ? tol.bound_rel * (*bound)[i] : 0.0);
    const double diff = std::abs(r - g);
    const double ratio = std::isfinite(diff) ? (allowed > 0.0 ? diff / allowed : INFINITY) : INFINITY;
    if (ratio > 1.0) ++bad;
    if (ratio > worst_ratio || std::isnan(diff)) {
      worst_ratio = std::isnan(diff) ? INFINITY : ratio;
      worst = i;
    }
  }
  if (bad) {
    std::ostringstream os;
    os.precision(9);
    os << bad << " of " << ref.size() << " elements out of tolerance (rel " << tol.rel << ", norm " << tol.norm
       << ", bound " << tol.bound_rel << "); worst at " << worst << ": cpu " << ref[worst] << ", device " << got[worst]
       << ", |diff|/allowed " << worst_ratio;
    FAIL_CHECK(os.str());
  } else {
    SUCCEED();
  }
}

inline void check_bitwise(const std::string& what, const std::vector<float>& a, const std::vector<float>& b) {
  INFO(what);
  REQUIRE(a.size() == b.size());
  size_t first = a.size(), count = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) {
      if (first == a.size()) first = i;
      ++count;
    }
  if (count) {
    std::ostringstream os;
    os.precision(9);
    os << count << " of " << a.size() << " elements differ bitwise; first at " << first << ": " << a[first] << " vs "
       << b[first];
    FAIL_CHECK(os.str());
  } else {
    SUCCEED();
  }
}

}  // namespace gtpo::testing
