// The --device / --precision flags shared by the commands that run a model, and the one place that makes a
// device's backend ready (docs/cuda.md).
#pragma once
#include <string>

#include "apps/args.h"
#include "runtime/backend.h"

namespace gtpo::apps {

// "--device cpu|cuda": the help text names the default and where it comes from.
FlagSpec device_flag(const std::string& default_text);

// The value of FLAG as a device / precision; errors name the flag, the value and the valid words.
Device parse_device(const std::string& flag, const std::string& value);
MatmulPrecision parse_precision(const std::string& flag, const std::string& value);

// --device when given, else `fallback`.
Device device_from(const Args& args, Device fallback = Device::cpu);

// Makes `device`'s backend ready with `options` before any tensor is placed there. Throws gtpo::Error
// (printed by main as "gtpo CMD: error: ...", exit 1) when the device is not available in this build or on
// this machine, or when the options are not supported there (tf32/bf16 on the CPU).
void prepare_device(Device device, const BackendOptions& options = {});

}  // namespace gtpo::apps
