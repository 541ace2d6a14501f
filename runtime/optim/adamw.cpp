#include "runtime/optim/adamw.h"

#include <algorithm>
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

AdamW::AdamW(ParameterStore& params, AdamWOptions options, AdamWShard shard)
    : params_(params), options_(options), shard_(shard) {
  check_options(options_);
  GTPO_CHECK(shard_.ranks >= 1 && shard_.rank >= 0 && shard_.rank < shard_.ranks, "AdamW: shard ",
             shard_.rank, " of ", shard_.ranks, " does not exist");
}

std::vector<OwnedSlice> owned_slices(const ParameterStore& params, AdamWShard shard) {
  const int64_t total = params.numel();
  const int64_t first = total * shard.rank / shard.ranks, last = total * (shard.rank + 1) / shard.ranks;
  std::vector<OwnedSlice> out;
  out.reserve(params.size());
  int64_t at = 0;
  for (const Parameter& p : params) {
    const int64_t a = std::max(first, at), b = std::min(last, at + p.tensor.numel());
    out.push_back({at, b > a ? a - at : 0, b > a ? b - a : 0});
    at += p.tensor.numel();
  }
  return out;
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
  const std::vector<OwnedSlice> owned = owned_slices();
  std::size_t index = 0;
  for (const Parameter& p : params_) {
    const OwnedSlice& o = owned[index++];
    const Tensor grad = p.tensor.grad();
    if (!grad.defined() || o.count == 0) continue;
    AdamWParamState& s = state_[p.name];
    if (!s.exp_avg.defined()) {
      const Shape shape = o.count == p.tensor.numel() ? p.tensor.shape() : Shape{o.count};
      s.offset = o.first;
      s.exp_avg = Tensor::zeros(shape, p.tensor.device());
      s.exp_avg_sq = Tensor::zeros(shape, p.tensor.device());
    }
    GTPO_CHECK(s.offset == o.first && s.exp_avg.numel() == o.count, "AdamW: the owned part of '", p.name,
               "' moved (a parameter was added after the first step of a sharded optimiser)");
    s.step += 1;
    // Bias corrections in double, rounded once, so they do not drift from 1 - beta^t over long runs.
    const double t = static_cast<double>(s.step);
    const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta1), t));
    const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(options_.beta2), t));
    const float wd = p.weight_decay ? options_.weight_decay : 0.0f;
    // In-place writes (mutable_data bumps the versions): a graph that saved the old values must now
    // refuse to run backward.
    p.tensor.backend().adamw_step(p.tensor.mutable_data() + o.first, grad.data() + o.first,
                                  s.exp_avg.mutable_data(), s.exp_avg_sq.mutable_data(), o.count,
                                  {lr, options_.beta1, options_.beta2, options_.eps, wd, bc1, bc2});
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
  const OwnedSlice o = owned_slices()[params_.index_of(name)];
  state_.erase(name);
  if (o.count == 0) return;  // another shard's
  // Copies, never aliases: the caller's tensors (say, a loaded checkpoint) must not be updated by steps.
  AdamWParamState s;
  s.step = step;
  s.offset = o.first;
  if (o.count == param.numel()) {
    s.exp_avg = Tensor::empty(param.shape(), param.device());
    s.exp_avg.copy_(exp_avg);
    s.exp_avg_sq = Tensor::empty(param.shape(), param.device());
    s.exp_avg_sq.copy_(exp_avg_sq);
  } else {
    auto owned_part = [&](const Tensor& whole) {
      const std::vector<float> all = whole.to_vector();
      const auto from = all.begin() + o.first;
      return Tensor::from_vector(std::vector<float>(from, from + o.count), Shape{o.count}, param.device());
    };
    s.exp_avg = owned_part(exp_avg);
    s.exp_avg_sq = owned_part(exp_avg_sq);
  }
  state_[name] = std::move(s);
}

std::vector<AdamWFullState> AdamW::full_state() const {
  GTPO_CHECK(shard_.ranks == 1, "AdamW: the state of shard ", shard_.rank, " of ", shard_.ranks,
             " is a part; gather it from every rank (dist::gather_optimizer_state)");
  std::vector<AdamWFullState> out;
  for (const std::string& name : state_names()) {
    const AdamWParamState& s = state_.at(name);
    out.push_back({name, s.step, s.exp_avg.shape(), s.exp_avg.to_vector(), s.exp_avg_sq.to_vector()});
  }
  return out;
}

int64_t AdamW::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& [name, s] : state_) bytes += (s.exp_avg.numel() + s.exp_avg_sq.numel()) * 4;
  return bytes;
}

}  // namespace gtpo::optim
