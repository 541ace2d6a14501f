#include "model/kv_cache.h"

#include "runtime/backend.h"
#include "runtime/error.h"

namespace gtpo::model {

KvCache KvCache::allocate(const ModelConfig& config, int64_t batch, int64_t capacity, Device device) {
  GTPO_CHECK(batch > 0 && capacity > 0, "kv cache: batch and capacity must be positive, got ", batch, " and ",
             capacity);
  KvCache cache;
  cache.batch = batch;
  cache.capacity = capacity;
  const Shape shape{batch, capacity, config.num_key_value_heads, config.head_dim()};
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    cache.keys.push_back(Tensor::zeros(shape, device));
    cache.values.push_back(Tensor::zeros(shape, device));
  }
  return cache;
}

int64_t KvCache::bytes() const {
  int64_t total = 0;
  for (const Tensor& t : keys) total += t.numel() * 4;
  for (const Tensor& t : values) total += t.numel() * 4;
  for (const Tensor& t : prefix_keys) total += t.numel() * 4;
  for (const Tensor& t : prefix_values) total += t.numel() * 4;
  return total;
}

void KvCache::share_groups_from(const KvCache& source, int64_t group) {
  GTPO_CHECK(source.batch * group == batch, "kv cache: ", source.batch, " prompts x ", group,
             " samples do not fill a cache of batch ", batch);
  GTPO_CHECK(source.length <= capacity, "kv cache: prompt length ", source.length, " exceeds capacity ", capacity);
  GTPO_CHECK(keys.size() == source.keys.size(), "kv cache: layer counts differ");
  GTPO_CHECK(source.prefix_length == 0, "kv cache: the source already reads a shared prefix");
  prefix_keys = source.keys;
  prefix_values = source.values;
  prefix_length = source.length;
  prefix_group = group;
  length = source.length;
}

}  // namespace gtpo::model
