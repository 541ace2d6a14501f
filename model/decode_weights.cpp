#include "model/decode_weights.h"

namespace gtpo::model {

Tensor DecodeWeights::linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  Prepared& p = prepared_[weight.impl()];
  const uint32_t version = weight.impl()->storage->version;
  if (!p.prepared.data.defined() || p.version != version || !p.weight.same_storage(weight)) {
    p.prepared = {};  // the old copy's memory is free for the new one
    p.prepared = ops::prepare_weight(weight);
    p.weight = weight;
    p.version = version;
  }
  return ops::linear(x, p.prepared, bias);
}

}  // namespace gtpo::model
