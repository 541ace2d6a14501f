// The rotary frequencies of RoPE: the base theta and an optional rescaling of the frequencies for long
// contexts, as plain numbers (the runtime knows no model config; the model fills this from its own).
// Written once for the CPU backend and the CUDA kernels (host and device), so both scale alike.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define GTPO_ROPE_HOST_DEVICE __host__ __device__
#else
#define GTPO_ROPE_HOST_DEVICE
#endif

namespace gtpo {

enum class RopeScaling : int32_t {
  none = 0,    // inv_freq(d) = theta^(-2d/D)
  linear = 1,  // inv_freq / factor (positions interpolated: pos / factor)
  llama3 = 2,  // Llama 3.1's per-frequency rule (Hugging Face _compute_llama3_parameters)
};

struct RopeFrequencies {
  // Implicit from a bare theta on purpose: every caller that only knows theta keeps reading as before.
  RopeFrequencies(float base = 10000.0f) : theta(base) {}  // NOLINT(google-explicit-constructor)

  float theta = 10000.0f;
  RopeScaling scaling = RopeScaling::none;
  double factor = 1.0;                   // linear, llama3
  double low_freq_factor = 1.0;          // llama3
  double high_freq_factor = 4.0;         // llama3
  double original_max_position = 8192.0; // llama3: original_max_position_embeddings
};

// Applies the scaling to one default frequency inv_freq = theta^(-2d/D); with no scaling it returns its
// argument unchanged (so unscaled models keep their bits). Double throughout, like the angle.
GTPO_ROPE_HOST_DEVICE inline double rope_scaled_inv_freq(double inv_freq, const RopeFrequencies& f) {
  if (f.scaling == RopeScaling::linear) return inv_freq / f.factor;
  if (f.scaling != RopeScaling::llama3) return inv_freq;
  const double pi = 3.14159265358979323846;
  const double wavelen = 2.0 * pi / inv_freq;
  const double low_freq_wavelen = f.original_max_position / f.low_freq_factor;
  const double high_freq_wavelen = f.original_max_position / f.high_freq_factor;
  if (wavelen < high_freq_wavelen) return inv_freq;           // high frequencies: kept
  if (wavelen > low_freq_wavelen) return inv_freq / f.factor;  // low frequencies: interpolated
  const double smooth =
      (f.original_max_position / wavelen - f.low_freq_factor) / (f.high_freq_factor - f.low_freq_factor);
  return (1.0 - smooth) * inv_freq / f.factor + smooth * inv_freq;
}

}  // namespace gtpo
