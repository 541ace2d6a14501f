// The safetensors dtype table shared by the reader and the writer (internal to runtime/io).
#pragma once
#include <cstddef>
#include <string_view>

namespace gtpo::io::detail {

struct DtypeInfo {
  std::string_view name;
  size_t size;
  // Position in HF's `Dtype` enum, which is declared in increasing alignment order; HF's writer lays tensors
  // out by descending `order`, then by name, so every tensor starts aligned to its element size.
  int order;
};

// nullptr for names that are not in the table.
const DtypeInfo* find_dtype(std::string_view name);

}  // namespace gtpo::io::detail
