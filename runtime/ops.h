// Every differentiable op of the runtime, as free functions over Tensor handles.
#pragma once
#include "runtime/autograd.h"
#include "runtime/ops/attention.h"
#include "runtime/ops/elementwise.h"
#include "runtime/ops/layout.h"
#include "runtime/ops/matmul.h"
#include "runtime/ops/norm.h"
#include "runtime/ops/reduce.h"
#include "runtime/ops/reshape.h"
#include "runtime/ops/softmax.h"
#include "runtime/tensor.h"
