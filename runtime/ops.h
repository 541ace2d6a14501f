// Every differentiable op of the runtime, as free functions over Tensor handles.
#pragma once
#include "runtime/autograd.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/embedding.h"
#include "runtime/ops/losses.h"
#include "runtime/ops/matmul.h"
#include "runtime/ops/reduce.h"
#include "runtime/ops/reshape.h"
#include "runtime/ops/rope.h"
#include "runtime/tensor.h"
