#include "runtime/ops/sampling.h"

#include <cmath>

#include "runtime/ops/op_utils.h"

namespace gtpo::ops {

namespace {

void check_choice(const Tensor& logits, const std::vector<double>& uniforms, const TokenChoiceArgs& a) {
  const char* op = "choose_tokens";
  detail::check_f32(op, logits, "logits");
  GTPO_CHECK(logits.rank() == 2, op, ": logits must be [rows, vocab], got ", logits.describe());
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  GTPO_CHECK(a.choice_ids >= 1 && a.choice_ids <= vocab, op, ": choice_ids must be in [1, ", vocab,
             "] (the logits' vocabulary), got ", a.choice_ids);
  GTPO_CHECK(a.temperature >= 0.0f && std::isfinite(a.temperature), op, ": temperature must be >= 0, got ",
             a.temperature);
  GTPO_CHECK(a.top_k >= 0, op, ": top_k must be >= 0, got ", a.top_k);
  GTPO_CHECK(a.top_p > 0.0f && a.top_p <= 1.0f, op, ": top_p must be in (0, 1], got ", a.top_p);
  if (a.temperature == 0.0f && uniforms.empty()) return;
  GTPO_CHECK(static_cast<int64_t>(uniforms.size()) == rows, op, ": ", uniforms.size(), " uniforms for ", rows,
             " rows of logits");
  for (size_t r = 0; r < uniforms.size(); ++r)
    GTPO_CHECK(uniforms[r] >= 0.0 && uniforms[r] < 1.0, op, ": uniform ", uniforms[r], " of row ", r,
               " is outside [0, 1)");
}

}  // namespace

Tensor choose_tokens(const Tensor& logits, const std::vector<double>& uniforms, const TokenChoiceArgs& args) {
  check_choice(logits, uniforms, args);
  const int64_t rows = logits.size(0);
  Tensor ids = Tensor::empty({rows}, logits.device(), DType::i32);
  Backend& backend = logits.backend();
  if (rows == 0) return ids;
  if (uniforms.empty() || logits.device() == Device::cpu) {
    backend.choose_tokens(logits.data(), uniforms.empty() ? nullptr : uniforms.data(), ids.data_i32(), rows,
                          logits.size(1), args);
    return ids;
  }
  const size_t bytes = uniforms.size() * sizeof(double);
  void* device_uniforms = backend.allocate(bytes);
  backend.copy_from_host(device_uniforms, uniforms.data(), bytes);
  backend.choose_tokens(logits.data(), static_cast<const double*>(device_uniforms), ids.data_i32(), rows,
                        logits.size(1), args);
  backend.deallocate(device_uniforms, bytes);  // the cached allocator reuses it only after the stream's work
  return ids;
}

}  // namespace gtpo::ops
