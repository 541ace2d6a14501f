#include "apps/method_help.h"

#include <vector>

#include "rl/math/algorithm_registry.h"
#include "rl/math/losses/loss.h"

namespace gtpo::apps {
namespace {

std::string line(const std::string& name, const std::string& summary) {
  return "  " + name + std::string(name.size() < 14 ? 14 - name.size() : 1, ' ') + summary + "\n";
}

}  // namespace

std::string algorithm_lines() {
  std::string out;
  for (const rl::Algorithm& a : rl::all_algorithms()) out += line(a.name, a.summary);
  return out;
}

std::string policy_loss_lines() {
  std::string out;
  for (const rl::PolicyLoss& l : rl::all_policy_losses()) out += line(l.name, l.summary);
  std::vector<std::string> sequence_level;
  for (const rl::Algorithm& a : rl::all_algorithms())
    if (a.sequence_ratio != nullptr) sequence_level.emplace_back(a.name);
  std::string label = "(";  // built in steps: GCC 12 warns (-Wrestrict) on "(" + string + ")"
  label += config::join(sequence_level);
  label += ")";
  return out + line(label, rl::sequence_policy_loss().summary);
}

std::string algorithm_names_where(bool rl::Algorithm::*flag, bool value) {
  std::vector<std::string> names;
  for (const rl::Algorithm& a : rl::all_algorithms())
    if (a.*flag == value) names.emplace_back(a.name);
  return config::join(names);
}

}  // namespace gtpo::apps
