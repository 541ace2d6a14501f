// The run config (rl/run_config.cpp over runtime/io/yaml_config.cpp): the input is YAML, then after a
// line "%%" one command-line override per line ("train.steps=3", "~rl.algo"). A config that loads must
// write out (resolved_config_yaml, the run directory's config.yaml) to text that loads back to itself.
#include "rl/run_config.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  return gtpo::fuzz::run_one([&] {
    const std::size_t sep = text.find("\n%%\n");
    const std::string yaml = text.substr(0, sep);
    gtpo::rl::ConfigOverrides overrides;
    if (sep != std::string::npos) {
      for (const std::string& arg : gtpo::fuzz::split(std::string_view(text).substr(sep + 4), '\n'))
        if (gtpo::rl::is_override(arg)) overrides.push_back(gtpo::rl::split_override(arg));
    }
    const gtpo::rl::RunConfig config = gtpo::rl::parse_run_config(yaml, "fuzz.yaml", overrides);
    const std::string resolved = gtpo::rl::resolved_config_yaml(config);
    const std::string again = gtpo::rl::resolved_config_yaml(gtpo::rl::parse_run_config(resolved, "resolved.yaml"));
    if (again != resolved) {
      std::fprintf(stderr, "fuzz: config.yaml does not read back to itself:\n%s\n---\n%s\n", resolved.c_str(),
                   again.c_str());
      std::abort();
    }
  });
}
