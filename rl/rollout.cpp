#include "rl/rollout.h"

#include <cmath>

#include "runtime/error.h"

namespace gtpo::rl {

int response_length(const Response& r) {
  return r.length >= 0 ? r.length : static_cast<int>(r.entropies.size());
}

bool is_correct(const Response& r) { return r.correct && !r.truncated; }

void validate_batch(const std::vector<Response>& batch, bool needs_entropies) {
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const Response& r = batch[i];
    const std::size_t n = r.entropies.size();
    if (r.length >= 0 && n != 0) {
      GTPO_CHECK(static_cast<std::size_t>(r.length) == n, "response ", i, " (group '", r.group, "'): length ",
                 r.length, " but ", n, " entropies; give one entropy per response token");
    }
    if (needs_entropies) {
      GTPO_CHECK(n == static_cast<std::size_t>(response_length(r)), "response ", i, " (group '", r.group,
                 "'): this algorithm needs one entropy per token, but length is ", response_length(r), " and ", n,
                 " entropies were given");
    }
    for (std::size_t t = 0; t < n; ++t) {
      const float h = r.entropies[t];
      GTPO_CHECK(std::isfinite(h), "response ", i, " (group '", r.group, "'): entropy at position ", t,
                 " is ", h, "; entropies must be finite");
      GTPO_CHECK(h >= -kEntropyRoundoff, "response ", i, " (group '", r.group, "'): entropy at position ", t,
                 " is ", h, "; entropies must be >= 0");
    }
  }
}

}  // namespace gtpo::rl
