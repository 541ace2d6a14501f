#include "apps/device_setup.h"

#include "runtime/error.h"

namespace gtpo::apps {

FlagSpec device_flag(const std::string& default_text) {
  return {"--device", true, "cpu or cuda: where the model runs (default " + default_text + ")"};
}

Device parse_device(const std::string& flag, const std::string& value) {
  if (value == "cpu") return Device::cpu;
  if (value == "cuda") return Device::cuda;
  fail(flag, ": expected cpu or cuda, got '", value, "'");
}

MatmulPrecision parse_precision(const std::string& flag, const std::string& value) {
  for (MatmulPrecision p : {MatmulPrecision::fp32, MatmulPrecision::tf32, MatmulPrecision::bf16})
    if (value == matmul_precision_name(p)) return p;
  fail(flag, ": expected fp32, tf32 or bf16, got '", value, "'");
}

Device device_from(const Args& args, Device fallback) {
  return args.has("--device") ? parse_device("--device", args.get("--device", "")) : fallback;
}

void prepare_device(Device device, const BackendOptions& options) {
  // backend_for throws a gtpo::Error that says why the device is missing (no CUDA build, no visible GPU).
  backend_for(device).configure(options);
}

}  // namespace gtpo::apps
