// The safetensors reader (runtime/io/safetensors_read.cpp) on arbitrary bytes: parse, then read every
// tensor as float (the checkpoint loader's path).
#include "runtime/io/safetensors.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return gtpo::fuzz::run_one([&] {
    const auto file = gtpo::io::SafetensorsFile::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    for (const auto& entry : file.entries()) {
      try {
        const std::vector<float> values = file.read_f32(entry.name);
        if (static_cast<int64_t>(values.size()) != entry.numel()) std::abort();
      } catch (const gtpo::Error&) {
        // An integer dtype: read_f32 refuses it by name; the other entries still get read.
      }
    }
  });
}
