// Per-primitive timing (Backend::set_profiling): a scope at the top of every backend primitive.
#pragma once
#include "runtime/backend.h"

namespace gtpo {

// Times one primitive call while its backend is profiling; nothing otherwise.
class PrimitiveScope {
 public:
  PrimitiveScope(Backend& backend, const char* name) : backend_(backend.profiling() ? &backend : nullptr) {
    if (backend_) backend_->profile_begin(name);
  }
  ~PrimitiveScope() {
    if (backend_) backend_->profile_end();
  }
  PrimitiveScope(const PrimitiveScope&) = delete;
  PrimitiveScope& operator=(const PrimitiveScope&) = delete;

 private:
  Backend* backend_;
};

}  // namespace gtpo

// The first statement of a backend primitive's body: times it under NAME.
#define GTPO_PRIMITIVE(name) const ::gtpo::PrimitiveScope gtpo_primitive_scope(*this, name)
