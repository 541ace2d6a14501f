#include "rl/math/overlong.h"

#include <algorithm>

#include "runtime/error.h"

namespace gtpo::rl {

double dapo_soft_penalty(int length, int l_max, int l_cache) {
  const int start = l_max - l_cache;
  if (length <= start) return 0.0;
  if (length <= l_max) return static_cast<double>(start - length) / static_cast<double>(l_cache);
  return -1.0;
}

double grop_knee_penalty(int length, double knee) {
  if (knee <= 0.0 || length < knee) return 0.0;
  if (length >= 2.0 * knee) return -0.5;
  return -0.5 * (length - knee) / knee;
}

double grop_knee(const std::vector<int>& lengths) {
  if (lengths.empty()) return 0.0;
  const auto [lo, hi] = std::minmax_element(lengths.begin(), lengths.end());
  double sum = 0.0;
  for (int l : lengths) sum += l;
  return std::max((*lo + *hi) / 2.0, sum / static_cast<double>(lengths.size()));
}

std::vector<double> grop_penalties(const std::vector<int>& lengths, const std::vector<bool>& correct) {
  const std::size_t g = lengths.size();
  std::vector<double> penalty(g, 0.0);
  std::size_t n = 0;
  for (bool c : correct) n += c ? 1 : 0;
  const std::size_t m = g - n;
  // Integer forms of n/G ≥ 3/4 and n/G ≤ 1/4 (γ1 = 0.75), exact for every G.
  const bool easy = 4 * n >= 3 * g;
  const bool hard = 4 * n <= g;
  if (g == 0 || (hard && !easy)) return penalty;

  bool penalise_correct = true;
  std::vector<int> knee_lengths;
  if (easy) {
    for (std::size_t i = 0; i < g; ++i)
      if (correct[i]) knee_lengths.push_back(lengths[i]);
  } else {
    knee_lengths = lengths;
    penalise_correct = n > m;
  }
  const double knee = grop_knee(knee_lengths);
  for (std::size_t i = 0; i < g; ++i)
    if (correct[i] == penalise_correct) penalty[i] = grop_knee_penalty(lengths[i], knee);
  return penalty;
}

std::vector<double> overlong_penalties(const std::vector<Response>& batch, const Grouping& groups,
                                       const RlConfig& cfg, int max_new_tokens) {
  std::vector<double> penalty(batch.size(), 0.0);
  switch (cfg.overlong) {
    case Overlong::None: break;
    case Overlong::DapoSoft: {
      GTPO_CHECK(
          max_new_tokens > 0,
          "rl.overlong=dapo_soft needs L_max: set sampler.max_new_tokens=N (or rl.overlong=none|grop)");
      const int l_cache = overlong_buffer_tokens(cfg, max_new_tokens);
      for (std::size_t i = 0; i < batch.size(); ++i)
        penalty[i] = dapo_soft_penalty(response_length(batch[i]), max_new_tokens, l_cache);
      break;
    }
    case Overlong::Grop:
      for (const auto& members : groups.members) {
        std::vector<int> lengths;
        std::vector<bool> correct;
        for (int i : members) {
          lengths.push_back(response_length(batch[i]));
          correct.push_back(is_correct(batch[i]));
        }
        const std::vector<double> p = grop_penalties(lengths, correct);
        for (std::size_t k = 0; k < members.size(); ++k) penalty[members[k]] = p[k];
      }
      break;
  }
  return penalty;
}

}  // namespace gtpo::rl
