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

  static KvCache allocate(const ModelConfig& config, int64_t batch, int64_t capacity, Device device);
  int64_t bytes() const;

  // Fills this cache's rows r * group .. r * group + group - 1 with row r of `source` (its first
  // source.length positions): a group of samples shares one prefilled prompt.
  void fill_groups_from(const KvCache& source, int64_t group);
};

}  // namespace gtpo::model
