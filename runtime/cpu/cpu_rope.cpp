// Rotary position embedding, half-split convention (Hugging Face Llama's rotate_half).
#include <cmath>
#include <vector>

#include "runtime/cpu/cpu_backend.h"
#include "runtime/parallel.h"

namespace gtpo {

void CpuBackend::rope(const float* x, const int32_t* positions, float* out, int64_t rows, int64_t heads,
                      int64_t head_dim, const RopeFrequencies& freq, bool inverse) {
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
  parallel_for(rows, grain_for(heads * head_dim * 2 + half * 40), [&](int64_t rb, int64_t re) {
    std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
    for (int64_t r = rb; r < re; ++r) {
      const double pos = static_cast<double>(positions[r]);
      for (int64_t d = 0; d < half; ++d) {
        const double angle = pos * inv_freq[static_cast<size_t>(d)];
        cs[static_cast<size_t>(d)] = static_cast<float>(std::cos(angle));
        sn[static_cast<size_t>(d)] = static_cast<float>(sign * std::sin(angle));
      }
      for (int64_t h = 0; h < heads; ++h) {
        const float* xi = x + (r * heads + h) * head_dim;
        float* yo = out + (r * heads + h) * head_dim;
        for (int64_t d = 0; d < half; ++d) {
          const float a = xi[d], b = xi[d + half];
          const float c = cs[static_cast<size_t>(d)], s = sn[static_cast<size_t>(d)];
          // HF rotate_half: out[d] = a cos - b sin, out[d + half] = b cos + a sin.
          yo[d] = a * c - b * s;
          yo[d + half] = b * c + a * s;
        }
      }
    }
  });
}

}  // namespace gtpo
