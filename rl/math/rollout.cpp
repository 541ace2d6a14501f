#include "rl/math/rollout.h"

#include <cmath>

#include "runtime/error.h"

namespace gtpo::rl {

int response_length(const Response& r) {
  return r.length >= 0 ? r.length : static_cast<int>(r.entropies.size());
}

bool is_correct(const Response& r) { return r.correct && !r.truncated; }

double outcome_reward(const Response& r) { return r.reward ? *r.reward : is_correct(r) ? 1.0 : 0.0; }

double shaping_reward(const Response& r) {
  if (r.reward) return *r.reward;
  return is_correct(r) ? 1.0 : -1.0;
}

void validate_response(const Response& r, bool needs_entropies, const std::string& where) {
  const std::size_t n = r.entropies.size();
  if (r.length >= 0 && n != 0) {
    GTPO_CHECK(static_cast<std::size_t>(r.length) == n, where, ": length ", r.length, " but ", n,
               " entropies; give one entropy per response token");
  }
  if (needs_entropies) {
    GTPO_CHECK(n == static_cast<std::size_t>(response_length(r)), where,
               ": this algorithm needs one entropy per token, but length is ", response_length(r), " and ", n,
               " entropies were given");
  }
  for (std::size_t t = 0; t < n; ++t) {
    const float h = r.entropies[t];
    GTPO_CHECK(std::isfinite(h), where, ": entropy at position ", t, " is ", h, "; entropies must be finite");
    GTPO_CHECK(h >= -kEntropyRoundoff, where, ": entropy at position ", t, " is ", h,
               "; entropies must be >= 0");
  }
}

void validate_batch(const std::vector<Response>& batch, bool needs_entropies) {
  for (std::size_t i = 0; i < batch.size(); ++i)
    validate_response(batch[i], needs_entropies,
                      "response " + std::to_string(i) + " (group '" + batch[i].group + "')");
}

}  // namespace gtpo::rl
