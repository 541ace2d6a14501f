#include "rl/math/losses/loss.h"
#include "runtime/error.h"

namespace gtpo::rl {

namespace losses {  // one factory per file of rl/math/losses/
PolicyLoss clip(), cispo(), clip_cov(), kl_cov(), unclipped(), sequence();
}  // namespace losses

const std::vector<PolicyLoss>& all_policy_losses() {
  static const std::vector<PolicyLoss> all = {losses::clip(), losses::cispo(), losses::clip_cov(),
                                              losses::kl_cov(), losses::unclipped()};
  return all;
}

const PolicyLoss& find_policy_loss(const std::string& name) {
  std::vector<std::string> known;
  for (const PolicyLoss& l : all_policy_losses()) {
    if (name == l.name) return l;
    known.emplace_back(l.name);
  }
  fail("unknown policy loss '", name, "'; known losses: ", config::join(known));
}

const PolicyLoss& sequence_policy_loss() {
  static const PolicyLoss loss = losses::sequence();
  return loss;
}

std::vector<RlKey> policy_loss_keys() {
  std::vector<std::pair<std::string, std::string>> names;
  std::string meaning = "per-token loss: ";
  for (const PolicyLoss& l : all_policy_losses()) {
    meaning += std::string(names.empty() ? "" : ", ") + l.name + " (" + l.summary + ")";
    names.emplace_back(l.name, l.name);
  }
  std::vector<RlKey> keys = {
      config::field("rl", "policy_loss", &RlConfig::policy_loss, config::choice(names), meaning)};
  for (const PolicyLoss& l : all_policy_losses())
    if (l.keys != nullptr)
      for (RlKey& k : l.keys()) keys.push_back(std::move(k));
  return keys;
}

}  // namespace gtpo::rl
