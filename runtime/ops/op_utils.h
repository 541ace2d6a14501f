// Checks and small helpers shared by the op implementations.
#pragma once
#include "runtime/autograd.h"
#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/tensor.h"

namespace gtpo::ops::detail {

inline void check_defined(const char* op, const Tensor& t, const char* arg) {
  GTPO_CHECK(t.defined(), op, ": argument '", arg, "' is an undefined tensor");
}

inline void check_f32(const char* op, const Tensor& t, const char* arg) {
  check_defined(op, t, arg);
  GTPO_CHECK(t.dtype() == DType::f32, op, ": argument '", arg, "' must be f32, got ", t.describe());
}

inline void check_i32(const char* op, const Tensor& t, const char* arg) {
  check_defined(op, t, arg);
  GTPO_CHECK(t.dtype() == DType::i32, op, ": argument '", arg, "' must be i32, got ", t.describe());
}

inline void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  GTPO_CHECK(a.device() == b.device(), op, ": tensors are on different devices: ", a.describe(), " and ",
             b.describe());
}

inline void check_rank_at_least(const char* op, const Tensor& t, int64_t rank, const char* arg) {
  GTPO_CHECK(t.rank() >= rank, op, ": argument '", arg, "' needs rank >= ", rank, ", got ", t.describe());
}

}  // namespace gtpo::ops::detail
