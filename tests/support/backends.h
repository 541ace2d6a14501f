// The op-test harness across backends (ggml's test-backend-ops idea): an op runs on the CPU and on every
// other available backend from the same inputs; outputs and input gradients must agree within a
// tolerance stated per op. Backends that are compiled out or have no device are reported and skipped.
#pragma once
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "runtime/autograd.h"
#include "runtime/backend.h"
#include "tests/support/gradcheck.h"

namespace gtpo::testing {

inline std::vector<Device> accelerator_devices() {
  std::vector<Device> devices;
  if (device_available(Device::cuda)) devices.push_back(Device::cuda);
  return devices;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(d)) return INFINITY;
    worst = std::max(worst, d);
  }
  return worst;
}

// Runs op on CPU copies and on each accelerator; compares outputs, then gradients of <w, outputs>.
inline void check_backends(const std::string& op_name, const MultiOp& op, const std::vector<Tensor>& cpu_inputs,
                           double tolerance) {
  const std::vector<Device> devices = accelerator_devices();
  if (devices.empty()) {
    // On the GPU machine (scripts/gpu_check.sh) a missing accelerator must not pass as a skip.
    const char* required = std::getenv("GTPO_REQUIRE_CUDA");
    if (required && *required && std::string(required) != "0")
      FAIL(op_name << ": GTPO_REQUIRE_CUDA=1 but no accelerator backend is available");
    WARN(op_name << ": no accelerator backend available (cuda compiled out or no GPU): CPU-only, skipped");
    return;
  }
  auto run_on = [&](Device device, std::vector<Tensor>& inputs) {
    inputs.clear();
    for (const Tensor& t : cpu_inputs) {
      if (!t.defined()) {
        inputs.push_back(Tensor());
        continue;
      }
      Tensor copy = t.detach().to(device);
      if (device == Device::cpu) copy = copy.clone();
      if (t.requires_grad()) copy.set_requires_grad(true);
      inputs.push_back(copy);
    }
    std::vector<Tensor> outs = op(inputs);
    std::vector<Tensor> roots, seeds;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (!outs[o].defined() || !outs[o].requires_grad()) continue;
      roots.push_back(outs[o]);
      seeds.push_back(Tensor::from_vector(random_values(outs[o].numel(), 99 + o), outs[o].shape()).to(device));
    }
    if (!roots.empty()) run_backward(roots, seeds, false);
    return outs;
  };
  std::vector<Tensor> cpu_in, cpu_out = run_on(Device::cpu, cpu_in);
  for (Device device : devices) {
    std::vector<Tensor> dev_in, dev_out = run_on(device, dev_in);
    REQUIRE(dev_out.size() == cpu_out.size());
    for (size_t o = 0; o < cpu_out.size(); ++o) {
      if (!cpu_out[o].defined()) continue;
      INFO(op_name << " output " << o << " on " << device_name(device));
      CHECK(max_abs_diff(cpu_out[o].to_vector(), dev_out[o].to(Device::cpu).to_vector()) <= tolerance);
    }
    for (size_t i = 0; i < cpu_in.size(); ++i) {
      if (!cpu_in[i].defined() || !cpu_in[i].requires_grad() || !cpu_in[i].grad().defined()) continue;
      INFO(op_name << " gradient of input " << i << " on " << device_name(device));
      CHECK(max_abs_diff(cpu_in[i].grad().to_vector(), dev_in[i].grad().to(Device::cpu).to_vector()) <= tolerance);
    }
  }
}

}  // namespace gtpo::testing
