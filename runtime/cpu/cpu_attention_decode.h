// The CPU attention path for a few queries per row (KV-cache decode); see cpu_attention_decode.cpp.
#pragma once
#include "runtime/backend.h"

namespace gtpo::cpu_attention {

// Up to this many queries per row, attention_forward takes the decode path.
constexpr int64_t kDecodeMaxQueries = 4;

// Same contract as Backend::attention_forward.
void decode_forward(const AttentionArgs& args, const float* q, const float* k, const float* v, float* out,
                    float* lse);

}  // namespace gtpo::cpu_attention
