#include "runtime/optim/adamw.h"

#include <cmath>

#include "runtime/backend.h"
#include "runtime/error.h"

namespace gtpo::optim {

namespace {
void check_options(const AdamWOptions& o) {
  GTPO_CHECK(o.beta1 >= 0.0f && o.beta1 < 1.0f, "AdamW: beta1 must be in [0, 1), got ", o.beta1);
  GTPO_CHECK(o.beta2 >= 0.0f && o.beta2 < 1.0f, "AdamW: beta2 must be in [0, 1), got ", o.beta2);
  GTPO_CHECK(o.eps > 0.0f, "AdamW: eps must be > 0, got ", o.eps);
  GTPO_CHECK(o.weight_decay >= 0.0f && std::isfinite(o.weight_decay),
             "AdamW: weight_decay must be finite and >= 0, got ", o.weight_decay);
  GTPO_CHECK(o.lr >= 0.0f && std::isfinite(o.lr), "AdamW: lr must be finite and >= 0, got ", o.lr);
}
}  // namespace

AdamW::AdamW(ParameterStore& params, AdamWOptions options) : params_(params), options_(options) {
  check_options(options_);
}

void AdamW::step(float lr) {
  GTPO_CHECK(lr >= 0.0f && std::isfinite(lr), "AdamW: step lr must be finite and >= 0, got ", lr);
  // Validate every gradient before touching anything, so a bad one cannot leave a half-applied step.
  for (const Parameter& p : params_) {
    const Tensor grad = p.tensor.grad();
    if (!grad.defined()) continue;
    GTPO_CHECK(grad.dtype() == DType::f32 && grad.shape() == p.tensor.shape() && grad.device() == p.tensor.device(),
               "AdamW: gradient of '", p.name, "' is ", grad.describe(), ", expected ", p.tensor.describe());
  }
  for (const Parameter& p : params_) {
    const Tensor grad = p.tensor.grad();
    if (!grad.defined()) continue;
    AdamWParamState& s = state_[p.name];
    if (!s.exp_avg.defined()) {
      s.exp_avg = Tensor::zeros(p.tensor.shape(), p.tensor.device());
      s.exp_avg_sq = Tensor::zeros(p.tensor.shape(), p.tensor.device());
    }
    s.step += 1;
    // Bias corrections in double, rounded once, so they do not drift from 1 - beta^t over long runs.
    const double t = static_cast<double>(s.step);
    const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta1), t));
    const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta2), t));
    const float wd = p.weight_decay ? options_.weight_decay : 0.0f;
    // In-place writes (mutable_data bumps the versions): a graph that saved the old values must now
    // refuse to run backward.
    p.tensor.backend().adamw_step(p.tensor.mutable_data(), grad.data(), s.exp_avg.mutable_data(),
                                  s.exp_avg_sq.mutable_data(), p.tensor.numel(), lr, options_.beta1, options_.beta2,
                                  options_.eps, wd, bc1, bc2);
  }
}

const AdamWParamState& AdamW::state(const std::string& name) const {
  params_.index_of(name);  // an unknown name gets the store's message listing valid names
  auto it = state_.find(name);
  GTPO_CHECK(it != state_.end(), "AdamW: parameter '", name, "' has no optimiser state yet (never had a gradient ",
             "at a step)");
  return it->second;
}

std::vector<std::string> AdamW::state_names() const {
  std::vector<std::string> out;
  for (const Parameter& p : params_)
    if (state_.count(p.name)) out.push_back(p.name);
  return out;
}

void AdamW::set_state(const std::string& name, int64_t step, const Tensor& exp_avg, const Tensor& exp_avg_sq) {
  const Tensor& param = params_.entry(name).tensor;
  GTPO_CHECK(step >= 1, "AdamW: set_state for '", name, "': step must be >= 1, got ", step);
  for (const Tensor* t : {&exp_avg, &exp_avg_sq}) {
    const char* which = t == &exp_avg ? "exp_avg" : "exp_avg_sq";
    GTPO_CHECK(t->defined(), "AdamW: set_state for '", name, "': ", which, " is undefined");
    GTPO_CHECK(t->dtype() == DType::f32 && t->shape() == param.shape(), "AdamW: set_state for '", name, "': ",
               which, " is ", t->describe(), ", expected the parameter's shape ", param.shape(), " in f32");
  }
  // Copies, never aliases: the caller's tensors (say, a loaded checkpoint) must not be updated by steps.
  AdamWParamState s;
  s.step = step;
  s.exp_avg = Tensor::empty(param.shape(), param.device());
  s.exp_avg.copy_(exp_avg);
  s.exp_avg_sq = Tensor::empty(param.shape(), param.device());
  s.exp_avg_sq.copy_(exp_avg_sq);
  state_[name] = std::move(s);
}

}  // namespace gtpo::optim
