#include "rl/math/entropy_mask.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gtpo::rl {

double apply_top_entropy_mask(const std::vector<Response>& batch, std::vector<ResponseResult>& results,
                              double rho) {
  std::vector<double> pool;
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (std::size_t t = 0; t < results[i].loss_mask.size(); ++t)
      if (results[i].loss_mask[t]) pool.push_back(entropy_at(batch[i], static_cast<int>(t)));
  if (pool.empty()) return 0.0;
  // The 1e-9 keeps ρ·N = 2.0000000001 from rounding k up to 3.
  const double want = std::ceil(rho * static_cast<double>(pool.size()) - 1e-9);
  const std::size_t k = std::clamp<std::size_t>(static_cast<std::size_t>(want), 1, pool.size());
  std::nth_element(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(k - 1), pool.end(),
                   std::greater<>());
  const double tau = pool[k - 1];
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (std::size_t t = 0; t < results[i].loss_mask.size(); ++t)
      if (results[i].loss_mask[t] && entropy_at(batch[i], static_cast<int>(t)) < tau)
        results[i].loss_mask[t] = 0;
  return tau;
}

}  // namespace gtpo::rl
