#include "rl/math/entropy_mask.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <tuple>

#include "runtime/random.h"

namespace gtpo::rl {

std::size_t forking_keep_count(std::size_t pool, double rho) {
  if (pool == 0) return 0;
  // The 1e-9 keeps ρ·N = 2.0000000001 from rounding k up to 3.
  const double want = std::ceil(rho * static_cast<double>(pool) - 1e-9);
  return std::clamp<std::size_t>(static_cast<std::size_t>(std::max(want, 0.0)), 1, pool);
}

double apply_top_entropy_mask(const std::vector<Response>& batch, std::vector<ResponseResult>& results,
                              double rho) {
  std::vector<double> pool;
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (std::size_t t = 0; t < results[i].loss_mask.size(); ++t)
      if (results[i].loss_mask[t]) pool.push_back(entropy_at(batch[i], static_cast<int>(t)));
  if (pool.empty()) return 0.0;
  const std::size_t k = forking_keep_count(pool.size(), rho);
  std::nth_element(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(k - 1), pool.end(),
                   std::greater<>());
  const double tau = pool[k - 1];
  for (std::size_t i = 0; i < batch.size(); ++i)
    for (std::size_t t = 0; t < results[i].loss_mask.size(); ++t)
      if (results[i].loss_mask[t] && entropy_at(batch[i], static_cast<int>(t)) < tau)
        results[i].loss_mask[t] = 0;
  return tau;
}

std::size_t apply_random_token_mask(std::vector<ResponseResult>& results, double rho, uint64_t seed) {
  struct Draw {
    uint64_t key;
    std::size_t i, t;
  };
  std::vector<Draw> pool;
  for (std::size_t i = 0; i < results.size(); ++i)
    for (std::size_t t = 0; t < results[i].loss_mask.size(); ++t)
      if (results[i].loss_mask[t]) pool.push_back({counter_hash(seed, i, t), i, t});
  const std::size_t k = forking_keep_count(pool.size(), rho);
  // (key, i, t) orders the pool totally, so an (astronomically rare) equal key cannot make the set vary.
  const auto before = [](const Draw& a, const Draw& b) {
    return std::tie(a.key, a.i, a.t) < std::tie(b.key, b.i, b.t);
  };
  std::nth_element(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(k), pool.end(), before);
  for (std::size_t d = k; d < pool.size(); ++d) results[pool[d].i].loss_mask[pool[d].t] = 0;
  return k;
}

}  // namespace gtpo::rl
