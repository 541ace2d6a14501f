#include "runtime/optim/grad_clip.h"

#include <cmath>

#include "runtime/backend.h"

namespace gtpo::optim {

double grad_norm(const ParameterStore& params) {
  double sum = 0.0;
  for (const Parameter& p : params) {
    const Tensor grad = p.tensor.grad();
    if (grad.defined()) sum += grad.backend().sum_squares(grad.data(), grad.numel());
  }
  return std::sqrt(sum);
}

float clip_coefficient(double norm, float max_norm) {
  if (!std::isfinite(norm) || max_norm <= 0.0f || norm <= static_cast<double>(max_norm)) return 1.0f;
  return static_cast<float>(static_cast<double>(max_norm) / (norm + 1e-6));
}

float clip_grad_norm(const ParameterStore& params, float max_norm) {
  const double norm = grad_norm(params);
  const float coef = clip_coefficient(norm, max_norm);
  if (coef == 1.0f) return static_cast<float>(norm);
  for (const Parameter& p : params) {
    const Tensor grad = p.tensor.grad();
    if (!grad.defined()) continue;
    float* g = grad.mutable_data();
    grad.backend().unary(UnaryOp::scale, g, g, grad.numel(), coef);
  }
  return static_cast<float>(norm);
}

}  // namespace gtpo::optim
