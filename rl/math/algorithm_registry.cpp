#include "rl/math/algorithm_registry.h"

#include "rl/math/algorithms/all.h"
#include "runtime/error.h"

namespace gtpo::rl {

const std::vector<Algorithm>& all_algorithms() {
  static const std::vector<Algorithm> all = {
      algorithms::grpo(),        algorithms::dr_grpo(), algorithms::dapo(),     algorithms::dapo_forking(),
      algorithms::gtpo(),        algorithms::grpo_s(),  algorithms::rloo(),     algorithms::reinforce_pp(),
      algorithms::gspo(),        algorithms::cispo(),   algorithms::clip_cov(), algorithms::kl_cov(),
      algorithms::entropy_adv(),
  };
  return all;
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const Algorithm& a : all_algorithms()) names.emplace_back(a.name);
  return names;
}

const Algorithm& find_algorithm(const std::string& name) {
  for (const Algorithm& a : all_algorithms())
    if (name == a.name) return a;
  fail("unknown algorithm '", name, "'; known algorithms: ", config::join(algorithm_names()));
}

RlConfig defaults_for(const std::string& algo) {
  const Algorithm& a = find_algorithm(algo);
  RlConfig cfg;
  cfg.algo = a.name;
  a.set_defaults(cfg);
  return cfg;
}

const PolicyLoss& active_policy_loss(const RlConfig& cfg) {
  return find_algorithm(cfg.algo).sequence_ratio != nullptr ? sequence_policy_loss()
                                                            : find_policy_loss(cfg.policy_loss);
}

const std::vector<RlKey>& rl_keys() {
  static const std::vector<RlKey> all = [] {
    std::vector<RlKey> k = shared_rl_keys();
    for (RlKey& key : policy_loss_keys()) k.push_back(std::move(key));
    for (const Algorithm& a : all_algorithms())
      if (a.keys != nullptr)
        for (RlKey& key : a.keys()) k.push_back(std::move(key));
    return k;
  }();
  return all;
}

const RlKey* find_rl_key(const std::string& dotted) {
  for (const RlKey& k : rl_keys())
    if (k.dotted() == dotted) return &k;
  return nullptr;
}

void set_rl_option(RlConfig& cfg, const std::string& key, const std::string& value) {
  const RlKey* k = find_rl_key(key);
  if (k == nullptr) {
    std::vector<std::string> valid;
    for (const RlKey& r : rl_keys()) valid.push_back(r.dotted());
    fail("unknown option '", key, "'", config::did_you_mean(key, valid),
         "; valid keys: ", config::join(valid));
  }
  try {
    k->set(cfg, value);
  } catch (const Error& e) {
    fail(key, ": ", e.what());
  }
}

std::vector<std::pair<std::string, std::string>> rl_option_values(const RlConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const RlKey& k : rl_keys()) values.emplace_back(k.dotted(), k.get(cfg));
  return values;
}

}  // namespace gtpo::rl
