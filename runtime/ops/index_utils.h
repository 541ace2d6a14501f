// Host-side access to i32 index tensors (token ids, targets), for validating them before a kernel runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::ops::detail {

// The values of an i32 tensor readable on the host: CPU tensors are read in place, others are copied.
class HostInts {
 public:
  explicit HostInts(const Tensor& t) {
    if (t.device() == Device::cpu) {
      data_ = t.data_i32();
    } else {
      copy_ = t.to_int_vector();
      data_ = copy_.data();
    }
  }
  int32_t operator[](int64_t i) const { return data_[i]; }

 private:
  const int32_t* data_ = nullptr;
  std::vector<int32_t> copy_;
};

// "[1, 2]": the multi-index of flat element `flat` in `shape`, for error messages.
inline std::string index_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int64_t a = shape.rank() - 1; a >= 0; --a) {
    idx[static_cast<size_t>(a)] = flat % shape[a];
    flat /= shape[a];
  }
  return Shape(std::move(idx)).str();
}

}  // namespace gtpo::ops::detail
