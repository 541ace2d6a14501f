#include "runtime/ops/embedding.h"

#include "runtime/ops/index_utils.h"
#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

// out [n, C] = table[ids] -> gtable [V, C]: zeros, plus every row of gout added at its id, in id order.
struct EmbeddingBackward final : Node {
  SavedTensor ids;
  int64_t vocab = 0, dim = 0;
  const char* name() const override { return "EmbeddingBackward"; }
  std::vector<Tensor> apply(const std::vector<Tensor>& grads) override {
    const Tensor& gy = grads[0];
    Tensor id = ids.unpack(name());
    Tensor gtable = Tensor::empty(Shape{vocab, dim}, gy.device());
    gy.backend().embedding_backward(id.data_i32(), gy.data(), gtable.data(), id.numel(), dim, vocab);
    return {gtable};
  }
  void release_saved() override { ids.reset(); }
};

void check_ids(const Tensor& ids, int64_t vocab) {
  detail::HostInts host(ids);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int32_t id = host[i];
    GTPO_CHECK(id >= 0 && id < vocab, "embedding: id ", id, " at position ", i,
               (ids.rank() > 1 ? " (index " + detail::index_string(ids.shape(), i) + ")" : std::string()),
               " is out of range for a table of V=", vocab, " rows");
  }
}

}  // namespace

Tensor embedding(const Tensor& table, const Tensor& ids) {
  detail::check_f32("embedding", table, "table");
  detail::check_i32("embedding", ids, "ids");
  detail::check_same_device("embedding", table, ids);
  GTPO_CHECK(table.rank() == 2, "embedding: table must be [V, C], got ", table.describe());
  const int64_t vocab = table.size(0), dim = table.size(1);
  check_ids(ids, vocab);

  std::vector<int64_t> out_dims = ids.shape().dims();
  out_dims.push_back(dim);
  Tensor out = Tensor::empty(Shape(out_dims), table.device());  // [..., C]
  table.backend().embedding_forward(table.data(), ids.data_i32(), out.data(), ids.numel(), dim);
  if (should_record({&table})) {
    auto node = std::make_shared<EmbeddingBackward>();
    node->ids = SavedTensor(ids);
    node->vocab = vocab;
    node->dim = dim;
    attach_node(node, {&table}, {&out});
  }
  return out;
}

}  // namespace gtpo::ops
