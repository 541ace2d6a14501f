// Rotary position embedding, half-split convention (Hugging Face Llama's rotate_half).
#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/parallel.h"
#include "runtime/primitive_profile.h"

namespace gtpo {

void CpuBackend::rope(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                      int64_t head_dim, const RopeFrequencies& freq, bool inverse) {
  GTPO_PRIMITIVE("rope");
  // Angles are formed and their cos/sin taken in double, then rounded once to float: positions in the
  // thousands times frequencies near 1 would otherwise lose ~1e-4 rad to fp32 rounding of the angle.
  // The rotation itself runs in fp32.
  const int64_t half = head_dim / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t d = 0; d < half; ++d)
    inv_freq[static_cast<size_t>(d)] = rope_scaled_inv_freq(
        std::pow(static_cast<double>(freq.theta), -2.0 * static_cast<double>(d) / static_cast<double>(head_dim)),
        freq);
  const double sign = inverse ? -1.0 : 1.0;
  // cos and sin of one position's angles, rounded to float.
  auto angles = [&](int64_t pos, float* cs, float* sn) {
    for (int64_t d = 0; d < half; ++d) {
      const double angle = static_cast<double>(pos) * inv_freq[static_cast<size_t>(d)];
      cs[d] = static_cast<float>(std::cos(angle));
      sn[d] = static_cast<float>(sign * std::sin(angle));
    }
  };
  auto rotate = [&](int64_t r, const float* cs, const float* sn) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* xi = x + (r * heads + h) * head_dim;
      float* yo = out + (r * heads + h) * head_dim;
      for (int64_t d = 0; d < half; ++d) {
        const float a = xi[d], b = xi[d + half];
        const float c = cs[d], s = sn[d];
        // HF rotate_half: out[d] = a cos - b sin, out[d + half] = b cos + a sin.
        yo[d] = a * c - b * s;
        yo[d + half] = b * c + a * s;
      }
    }
  };
  if (rows <= 0 || half == 0) return;
  // A batch of sequences repeats the same few positions in every row: when the span of positions is no
  // longer than the rows, take cos/sin once per position into a table (the same double arithmetic, so the
  // same floats) instead of once per row. In a training forward this was 16 libm calls per row per head
  // group, the larger part of RoPE's cost.
  const auto [lo_it, hi_it] = std::minmax_element(positions, positions + rows);
  const int64_t lo = *lo_it, span = static_cast<int64_t>(*hi_it) - lo + 1;
  if (span <= rows) {
    std::vector<float> cs(static_cast<size_t>(span * half)), sn(static_cast<size_t>(span * half));
    parallel_for(span, grain_for(half * 40), [&](int64_t pb, int64_t pe) {
      for (int64_t p = pb; p < pe; ++p) angles(lo + p, cs.data() + p * half, sn.data() + p * half);
    });
    parallel_for(rows, grain_for(heads * head_dim * 2), [&](int64_t rb, int64_t re) {
      for (int64_t r = rb; r < re; ++r) {
        const int64_t at = (positions[r] - lo) * half;
        rotate(r, cs.data() + at, sn.data() + at);
      }
    });
    return;
  }
  parallel_for(rows, grain_for(heads * head_dim * 2 + half * 40), [&](int64_t rb, int64_t re) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t r = rb; r < re; ++r) {
      angles(positions[r], cs.data(), sn.data());
      rotate(r, cs.data(), sn.data());
    }
  });
}

}  // namespace gtpo
