#include "runtime/ops/embedding.h"

#include "runtime/ops/index_utils.h"
#include "runtime/ops/op_utils.h"
#include "runtime/ops/reshape.h"

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

// `noun` names an entry ("id"), `range` what it indexes ("a table of V=").
void check_ids(const char* op, const char* noun, const char* range, const Tensor& ids, int64_t vocab) {
  detail::HostInts host(ids);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const int32_t id = host[i];
    GTPO_CHECK(id >= 0 && id < vocab, op, ": ", noun, " ", id, " at position ", i,
               (ids.rank() > 1 ? " (index " + detail::index_string(ids.shape(), i) + ")" : std::string()),
               " is out of range for ", range, vocab, " rows");
  }
}

// table [V, C] rows at ids [...] -> [..., C], for ids already checked against V.
Tensor lookup(const Tensor& table, const Tensor& ids) {
  const int64_t vocab = table.size(0), dim = table.size(1);
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

}  // namespace

Tensor embedding(const Tensor& table, const Tensor& ids) {
  detail::check_f32("embedding", table, "table");
  detail::check_i32("embedding", ids, "ids");
  detail::check_same_device("embedding", table, ids);
  GTPO_CHECK(table.rank() == 2, "embedding: table must be [V, C], got ", table.describe());
  check_ids("embedding", "id", "a table of V=", ids, table.size(0));
  return lookup(table, ids);
}

Tensor gather_rows(const Tensor& x, const Tensor& index) {
  detail::check_f32("gather_rows", x, "x");
  detail::check_i32("gather_rows", index, "index");
  detail::check_same_device("gather_rows", x, index);
  GTPO_CHECK(x.rank() >= 1, "gather_rows: x must have a row axis, got ", x.describe());
  GTPO_CHECK(index.rank() == 1, "gather_rows: index must be i32 [M], got ", index.describe());
  const int64_t rows = x.size(0);
  const int64_t row = rows > 0 ? x.numel() / rows : 0;
  check_ids("gather_rows", "index", "x of ", index, rows);
  std::vector<int64_t> out_dims = x.shape().dims();
  out_dims[0] = index.size(0);
  return reshape(lookup(reshape(x, Shape{rows, row}), index), Shape(out_dims));
}

}  // namespace gtpo::ops
