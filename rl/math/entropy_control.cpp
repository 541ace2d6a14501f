#include "rl/math/entropy_control.h"

namespace gtpo::rl {

double next_entropy_coef(double coef, double target, double step_size, double entropy_mean) {
  if (entropy_mean < target) return coef + step_size;
  if (entropy_mean > target) return coef - step_size;
  return coef;
}

}  // namespace gtpo::rl
