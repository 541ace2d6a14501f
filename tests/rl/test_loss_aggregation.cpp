// Loss normalisers, hand-computed.
#include <catch2/catch.hpp>

#include "rl/math/loss_aggregation.h"

using namespace gtpo::rl;

namespace {
// Two responses in the loss (3 tokens, one masked; 1 token), one fully masked (dropped), one empty.
const std::vector<std::vector<uint8_t>> kMasks = {{1, 1, 0}, {1}, {0, 0, 0, 0, 0}, {}};
}  // namespace

TEST_CASE("token-mean divides by the tokens in the loss") {
  const auto w = token_loss_weights(kMasks, LossAgg::TokenMean);
  CHECK(w[0] == std::vector<float>{1.0f / 3, 1.0f / 3, 0.0f});
  CHECK(w[1] == std::vector<float>{1.0f / 3});
  CHECK(w[2] == std::vector<float>(5, 0.0f));
  CHECK(w[3].empty());
}

TEST_CASE("seq-mean-token-mean averages tokens within a response, then responses") {
  const auto w = token_loss_weights(kMasks, LossAgg::SeqMeanTokenMean);
  CHECK(w[0] == std::vector<float>{0.25f, 0.25f, 0.0f});
  CHECK(w[1] == std::vector<float>{0.5f});
}

TEST_CASE("seq-mean-token-sum and -norm") {
  const auto sum = token_loss_weights(kMasks, LossAgg::SeqMeanTokenSum);
  CHECK(sum[0] == std::vector<float>{0.5f, 0.5f, 0.0f});
  CHECK(sum[1] == std::vector<float>{0.5f});
  // G · max_len over the responses in the loss: 2 · 3 (the masked 5-token response does not count).
  const auto norm = token_loss_weights(kMasks, LossAgg::SeqMeanTokenSumNorm);
  CHECK(norm[0] == std::vector<float>{1.0f / 6, 1.0f / 6, 0.0f});
  CHECK(norm[1] == std::vector<float>{1.0f / 6});
}

TEST_CASE("sequence weights are 1/G over the responses in the loss (GRPO-S Eq. 10)") {
  CHECK(sequence_loss_weights(kMasks) == std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f});
}

TEST_CASE("counted masks set the normaliser, the loss masks the tokens that get a weight") {
  // The loss keeps token 0 of response 0 and nothing of response 1; the normaliser counts 3 + 1 tokens.
  const std::vector<std::vector<uint8_t>> in_loss = {{1, 0, 0}, {0}};
  const std::vector<std::vector<uint8_t>> counted = {{1, 1, 1}, {1}};
  CHECK(token_loss_weights(in_loss, LossAgg::TokenMean, &counted)[0] ==
        std::vector<float>{0.25f, 0.0f, 0.0f});
  CHECK(token_loss_weights(in_loss, LossAgg::SeqMeanTokenMean, &counted)[0] ==
        std::vector<float>{1.0f / 6, 0.0f, 0.0f});
  CHECK(token_loss_weights(in_loss, LossAgg::SeqMeanTokenSum, &counted)[0] ==
        std::vector<float>{0.5f, 0.0f, 0.0f});
  CHECK(token_loss_weights(in_loss, LossAgg::SeqMeanTokenSumNorm, &counted)[0] ==
        std::vector<float>{1.0f / 6, 0.0f, 0.0f});
  CHECK(token_loss_weights(in_loss, LossAgg::TokenMean, &counted)[1] == std::vector<float>{0.0f});
}

TEST_CASE("a mini-batch with nothing in the loss gets zero weights") {
  const std::vector<std::vector<uint8_t>> none = {{0, 0}, {}};
  for (LossAgg agg : {LossAgg::TokenMean, LossAgg::SeqMeanTokenMean, LossAgg::SeqMeanTokenSum,
                      LossAgg::SeqMeanTokenSumNorm})
    CHECK(token_loss_weights(none, agg)[0] == std::vector<float>{0.0f, 0.0f});
  CHECK(sequence_loss_weights(none) == std::vector<float>{0.0f, 0.0f});
}
