// Element types and devices a tensor can have.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gtpo {

// f32 is the only float type the CPU backend computes in; bf16/f16 are reserved for GPU mixed precision.
// i32 carries token ids, positions and masks.
enum class DType : uint8_t { f32, i32, bf16, f16 };
enum class Device : uint8_t { cpu, cuda };

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32: return 4;
    case DType::bf16:
    case DType::f16: return 2;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
  }
  return "?";
}

inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

}  // namespace gtpo
