#include "rl/math/loss_aggregation.h"

#include <algorithm>

#include "runtime/error.h"

namespace gtpo::rl {
namespace {

struct Counts {
  std::vector<std::size_t> per_response;  // T_i
  std::size_t tokens = 0;                 // T
  std::size_t responses = 0;              // S
  std::size_t max_len = 0;                // L
};

Counts count(const std::vector<std::vector<uint8_t>>& masks) {
  Counts c;
  for (const auto& m : masks) {
    std::size_t n = 0;
    for (uint8_t v : m) n += v ? 1 : 0;
    c.per_response.push_back(n);
    c.tokens += n;
    if (n > 0) {
      ++c.responses;
      c.max_len = std::max(c.max_len, m.size());
    }
  }
  return c;
}

}  // namespace

std::vector<std::vector<float>> token_loss_weights(const std::vector<std::vector<uint8_t>>& masks,
                                                   LossAgg agg,
                                                   const std::vector<std::vector<uint8_t>>* counted) {
  GTPO_CHECK(counted == nullptr || counted->size() == masks.size(), "token_loss_weights: ", masks.size(),
             " loss masks but ", counted->size(), " normaliser masks");
  const Counts c = count(counted != nullptr ? *counted : masks);
  std::vector<std::vector<float>> weights;
  weights.reserve(masks.size());
  for (std::size_t i = 0; i < masks.size(); ++i) {
    double w = 0.0;
    if (c.per_response[i] > 0) {
      const double s = static_cast<double>(c.responses);
      switch (agg) {
        case LossAgg::TokenMean: w = 1.0 / static_cast<double>(c.tokens); break;
        case LossAgg::SeqMeanTokenMean: w = 1.0 / (s * static_cast<double>(c.per_response[i])); break;
        case LossAgg::SeqMeanTokenSum: w = 1.0 / s; break;
        case LossAgg::SeqMeanTokenSumNorm: w = 1.0 / (s * static_cast<double>(c.max_len)); break;
      }
    }
    std::vector<float>& row = weights.emplace_back(masks[i].size(), 0.0f);
    for (std::size_t t = 0; t < row.size(); ++t)
      if (masks[i][t]) row[t] = static_cast<float>(w);
  }
  return weights;
}

std::vector<float> sequence_loss_weights(const std::vector<std::vector<uint8_t>>& masks) {
  const Counts c = count(masks);
  std::vector<float> weights(masks.size(), 0.0f);
  for (std::size_t i = 0; i < masks.size(); ++i)
    if (c.per_response[i] > 0) weights[i] = static_cast<float>(1.0 / static_cast<double>(c.responses));
  return weights;
}

std::vector<std::vector<uint8_t>> normaliser_masks(const std::vector<ResponseResult>& responses,
                                                   std::size_t first, std::size_t last) {
  std::vector<std::vector<uint8_t>> masks;
  for (std::size_t i = first; i < last; ++i)
    masks.push_back(responses[i].norm_mask.empty() ? responses[i].loss_mask : responses[i].norm_mask);
  return masks;
}

}  // namespace gtpo::rl
