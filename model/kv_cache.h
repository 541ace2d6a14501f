// The key/value cache of one rollout batch: allocated once, written in place as decoding advances.
#pragma once
#include <cstdint>
#include <vector>

#include "model/model_config.h"
#include "runtime/tensor.h"

namespace gtpo::model {

struct KvCache {
  // Per layer, [batch, capacity, kv_heads, head_dim].
  std::vector<Tensor> keys, values;
  int64_t batch = 0;
  int64_t capacity = 0;
  int64_t length = 0;  // positions filled so far, the same for every row

  // Optional shared prefix (see share_groups_from): per layer [batch / prefix_group, Tp, kv_heads, head_dim].
  // Positions [0, prefix_length) of every row are read from there; this cache's own rows there stay unused.
  std::vector<Tensor> prefix_keys, prefix_values;
  int64_t prefix_length = 0;
  int64_t prefix_group = 1;

  static KvCache allocate(const ModelConfig& config, int64_t batch, int64_t capacity, Device device);
  int64_t bytes() const;

  // A group of samples shares one prefilled prompt: rows r * group .. r * group + group - 1 read row r of
  // `source` as their first source.length positions (the tensors are shared, so `source` may go out of
  // scope). Decode then streams each prompt's keys and values once per group from cache instead of once per
  // row from memory.
  void share_groups_from(const KvCache& source, int64_t group);
};

}  // namespace gtpo::model
