#include "runtime/io/safetensors_dtype.h"

#include <array>

#include "runtime/io/safetensors.h"

namespace gtpo::io {
namespace detail {

const DtypeInfo* find_dtype(std::string_view name) {
  static constexpr std::array<DtypeInfo, 15> kTable = {{
      {"BOOL", 1, 0},
      {"U8", 1, 1},
      {"I8", 1, 2},
      {"F8_E5M2", 1, 3},
      {"F8_E4M3", 1, 4},
      {"I16", 2, 5},
      {"U16", 2, 6},
      {"F16", 2, 7},
      {"BF16", 2, 8},
      {"I32", 4, 9},
      {"U32", 4, 10},
      {"F32", 4, 11},
      {"F64", 8, 12},
      {"I64", 8, 13},
      {"U64", 8, 14},
  }};
  for (const DtypeInfo& info : kTable) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

}  // namespace detail

std::optional<size_t> safetensors_dtype_size(std::string_view dtype) {
  const detail::DtypeInfo* info = detail::find_dtype(dtype);
  if (info == nullptr) return std::nullopt;
  return info->size;
}

int64_t SafetensorsEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated on load: no overflow, no negatives
  return n;
}

}  // namespace gtpo::io
