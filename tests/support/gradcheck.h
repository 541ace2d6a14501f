// Finite-difference gradient checks for ops, in the spirit of torch.autograd.gradcheck, adapted to fp32.
//
// The op's outputs are reduced to a scalar L = sum_o <w_o, y_o> with fixed random weights w_o, summed in
// double on the host. The analytic gradient comes from backward() seeded with w_o; the numeric one from
// central differences (L(x + h) - L(x - h)) / 2h on every element of every input that requires grad.
// fp32 forward rounding bounds the achievable agreement, so each op states its tolerance.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <sstream>
#include <vector>

#include "runtime/autograd.h"
#include "tests/support/random.h"

namespace gtpo::testing {

using MultiOp = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct GradcheckTolerance {
  double step = 1e-2;  // h
  double atol = 2e-3;
  double rtol = 2e-2;
};

inline double weighted_sum(const std::vector<Tensor>& outputs, const std::vector<std::vector<float>>& weights) {
  double total = 0.0;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!outputs[o].defined()) continue;
    std::vector<float> y = outputs[o].to_vector();
    for (size_t i = 0; i < y.size(); ++i) total += static_cast<double>(y[i]) * weights[o][i];
  }
  return total;
}

// Returns the number of mismatching elements (0 on success); reports each mismatch through Catch.
inline int gradcheck(const MultiOp& op, const std::vector<Tensor>& inputs, GradcheckTolerance tol = {},
                     uint64_t seed = 1234) {
  // Analytic gradients.
  for (const Tensor& in : inputs)
    if (in.defined() && in.requires_grad()) in.zero_grad();
  std::vector<Tensor> outputs = op(inputs);
  std::vector<std::vector<float>> weights;
  std::vector<Tensor> roots, seeds;
  for (size_t o = 0; o < outputs.size(); ++o) {
    const int64_t n = outputs[o].defined() ? outputs[o].numel() : 0;
    weights.push_back(random_values(n, seed + 17 * o, -1.0f, 1.0f));
    if (n > 0 && outputs[o].requires_grad()) {
      roots.push_back(outputs[o]);
      seeds.push_back(Tensor::from_vector(weights.back(), outputs[o].shape(), outputs[o].device()));
    }
  }
  REQUIRE(!roots.empty());
  run_backward(roots, seeds, false);

  int mismatches = 0;
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& x = inputs[i];
    if (!x.defined() || !x.requires_grad()) continue;
    Tensor grad = x.grad();
    std::vector<float> analytic = grad.defined() ? grad.to_vector() : std::vector<float>(static_cast<size_t>(x.numel()), 0.0f);
    std::vector<float> values = x.to_vector();
    for (size_t j = 0; j < values.size(); ++j) {
      const float original = values[j];
      values[j] = original + static_cast<float>(tol.step);
      x.copy_(Tensor::from_vector(values, x.shape()));
      const double plus = weighted_sum(op(inputs), weights);
      values[j] = original - static_cast<float>(tol.step);
      x.copy_(Tensor::from_vector(values, x.shape()));
      const double minus = weighted_sum(op(inputs), weights);
      values[j] = original;
      x.copy_(Tensor::from_vector(values, x.shape()));
      const double numeric = (plus - minus) / (2.0 * tol.step);
      const double diff = std::abs(numeric - analytic[j]);
      if (!(diff <= tol.atol + tol.rtol * std::abs(numeric))) {
        if (mismatches < 8) {
          std::ostringstream msg;
          msg << "input " << i << " element " << j << ": analytic " << analytic[j] << " numeric " << numeric;
          UNSCOPED_INFO(msg.str());
        }
        ++mismatches;
      }
    }
  }
  return mismatches;
}

inline int gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& op, const std::vector<Tensor>& inputs,
                     GradcheckTolerance tol = {}, uint64_t seed = 1234) {
  return gradcheck(MultiOp([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{op(in)}; }), inputs, tol,
                   seed);
}

}  // namespace gtpo::testing
