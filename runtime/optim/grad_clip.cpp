#include "runtime/optim/grad_clip.h"

#include <cmath>
#include <vector>

#include "runtime/backend.h"
#include "runtime/error.h"

namespace gtpo::optim {

// Every gradient's sum of squares in one call (one wait on a GPU), added in parameter order.
double grad_norm(const ParameterStore& params) {
  std::vector<const float*> grads;
  std::vector<int64_t> sizes;
  Backend* backend = nullptr;
  for (const Parameter& p : params) {
    const Tensor grad = p.tensor.grad();
    if (!grad.defined()) continue;
    GTPO_CHECK(backend == nullptr || backend == &grad.backend(), "grad_norm: gradients on different devices");
    backend = &grad.backend();
    grads.push_back(grad.data());
    sizes.push_back(grad.numel());
  }
  std::vector<double> squares(grads.size(), 0.0);
  if (backend) backend->sum_squares_each(grads, sizes, squares.data());
  double sum = 0.0;
  for (double s : squares) sum += s;
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
