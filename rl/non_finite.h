// A run stops at its first non-finite number (loss, gradient norm, log-probability): training on it would
// only spread NaN through the weights, and a checkpoint saved after it would be worthless. The error names
// the phase, the step and the quantity; the trainer adds the last good checkpoint.
#pragma once
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>

#include "model/transformer.h"
#include "runtime/error.h"

namespace gtpo::rl {

class NonFiniteError : public Error {
 public:
  using Error::Error;
};

// Throws NonFiniteError ("sft step 3: the loss is nan") when VALUE is NaN or infinite; a negative step
// is left out of the message.
inline void check_finite(double value, const char* phase, int64_t step, const char* quantity) {
  if (std::isfinite(value)) return;
  std::ostringstream os;
  os << phase;
  if (step >= 0) os << " step " << step;
  os << ": the " << quantity << " is " << value
     << " (non-finite; the run has diverged: lower the learning rate or check the data)";
  throw NonFiniteError(os.str());
}

// Throws NonFiniteError naming the first parameter that holds a NaN or an infinity: checked before every
// checkpoint, so a diverged state is never saved.
inline void check_weights_finite(const model::Transformer& model, const char* phase, int64_t step) {
  for (const optim::Parameter& p : model.parameters()) {
    for (float v : p.tensor.to_vector()) {
      if (std::isfinite(v)) continue;
      std::ostringstream os;
      os << phase << " step " << step << ": parameter '" << p.name << "' holds " << v
         << " (non-finite; the run has diverged: lower the learning rate or check the data)";
      throw NonFiniteError(os.str());
    }
  }
}

}  // namespace gtpo::rl
