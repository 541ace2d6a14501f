// Layout ops: transposes, permutes, slices, concatenation and splits.
//
// Every output is contiguous row-major (gtpo has no strided tensors). Axes may be negative (counted
// from the end). slice/concat/split move raw elements, so they accept f32 and i32 tensors alike;
// transpose/permute are f32 only. Gradients flow to f32 inputs that require them.
#pragma once
#include <cstdint>
#include <vector>

#include "runtime/tensor.h"

namespace gtpo::ops {

// Swaps two dims: a permute with dim0 and dim1 exchanged. Always a copy.
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);

// out.shape[i] = x.shape[perm[i]]; perm is a permutation of [0, rank) (entries may be negative); rank <= 8.
Tensor permute(const Tensor& x, const std::vector<int64_t>& perm);

// Elements [begin, end) along axis. begin and end may be negative (counted from the end of that axis) and
// must then satisfy 0 <= begin <= end <= size. When the slice is one contiguous block of x (all dims
// before axis are 1, e.g. axis 0, or the slice covers the whole axis) the result is a view sharing x's
// storage; otherwise a copy. The backward scatters the gradient into zeros of x's shape.
Tensor slice(const Tensor& x, int64_t axis, int64_t begin, int64_t end);

// Joins tensors along axis; every other dim, the dtype and the device must agree. One tensor in, a copy out.
Tensor concat(const std::vector<Tensor>& xs, int64_t axis);

// Cuts x along axis into pieces of the given sizes (they must sum to x's size there). One node with one
// output per piece; each piece is a view when it is one contiguous block of x (as for slice).
std::vector<Tensor> split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes);

// In place: src [Bs, T, ...] written into dst [Bd, C, ...] (the same trailing dims, f32, one device) at
// positions [at, at + T) of axis 1, src's entry b into dst's entry rows[b] (rows empty: entry b). A KV
// cache's append while decoding; not recorded, so dst must not require a gradient.
void write_positions(const Tensor& dst, const Tensor& src, int64_t at, const std::vector<int32_t>& rows = {});

}  // namespace gtpo::ops
