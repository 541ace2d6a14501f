#include "rl/policy_loss.h"

#include "runtime/autograd.h"
#include "runtime/error.h"

namespace gtpo::rl {

namespace {

struct PolicyLossBackward final : Node {
  std::vector<float> dloss_dlogprob;  // precomputed in forward: the loss is linear in its upstream grad
  std::vector<float> dloss_dentropy;
  Shape shape;
  const char* name() const override { return "PolicyLossBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const float g = grads[0].item();
    Tensor glp, gent;
    if (needs_input_grad(0)) {
      std::vector<float> v(dloss_dlogprob);
      for (float& x : v) x *= g;
      glp = Tensor::from_vector(v, shape, grads[0].device());
    }
    if (needs_input_grad(1) && !dloss_dentropy.empty()) {
      std::vector<float> v(dloss_dentropy);
      for (float& x : v) x *= g;
      gent = Tensor::from_vector(v, shape, grads[0].device());
    }
    return {glp, gent};
  }
};

}  // namespace

Tensor policy_loss(const Tensor& logprobs, const Tensor& entropies, const PolicyLossInputs& in,
                   const RlConfig& c, PolicyLossMetrics* metrics, ClipStatuses* clip) {
  GTPO_CHECK(logprobs.defined() && logprobs.rank() == 1, "policy_loss: logprobs must be [N], got ",
             logprobs.describe());
  GTPO_CHECK(!entropies.defined() || entropies.numel() == logprobs.numel(),
             "policy_loss: ", entropies.numel(), " entropies for ", logprobs.numel(), " log-probs");
  PolicyLossTerms terms = policy_loss_terms(
      logprobs.to_vector(), entropies.defined() ? entropies.to_vector() : std::vector<float>{}, in, c);
  if (metrics) *metrics = terms.metrics;
  if (clip) *clip = std::move(terms.status);
  Tensor out = Tensor::scalar(static_cast<float>(terms.loss), logprobs.device());
  if (should_record({&logprobs, &entropies})) {
    auto node = std::make_shared<PolicyLossBackward>();
    node->dloss_dlogprob = std::move(terms.dloss_dlogprob);
    node->dloss_dentropy = std::move(terms.dloss_dentropy);
    node->shape = logprobs.shape();
    attach_node(node, {&logprobs, &entropies}, {&out});
  }
  return out;
}

}  // namespace gtpo::rl
