// Shape: the dimensions of a contiguous row-major tensor.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

namespace gtpo {

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
  // Negative axes count from the end, as in numpy.
  int64_t operator[](int64_t axis) const { return dims_[static_cast<size_t>(normalize_axis(axis))]; }
  int64_t& operator[](int64_t axis) { return dims_[static_cast<size_t>(normalize_axis(axis))]; }
  int64_t normalize_axis(int64_t axis) const { return axis < 0 ? axis + rank() : axis; }

  // Product of dims in [begin, end).
  int64_t numel_range(int64_t begin, int64_t end) const {
    int64_t n = 1;
    for (int64_t i = begin; i < end; ++i) n *= dims_[static_cast<size_t>(i)];
    return n;
  }

  const std::vector<int64_t>& dims() const { return dims_; }
  bool operator==(const Shape& other) const { return dims_ == other.dims_; }
  bool operator!=(const Shape& other) const { return dims_ != other.dims_; }

  std::string str() const {
    std::string s = "[";
    for (size_t i = 0; i < dims_.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(dims_[i]);
    }
    return s + "]";
  }

 private:
  std::vector<int64_t> dims_;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.str(); }

}  // namespace gtpo
