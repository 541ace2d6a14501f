// gtpo probe: before a study spends hours, whether its methods can be told apart here (rl/probe.h).
#include <cstdio>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "apps/run_setup.h"
#include "rl/probe.h"
#include "rl/run_config.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    {"--checkpoint", true,
     "the policy: a checkpoint or Hugging Face directory (default: the config's train.init_from)"},
    {"--methods", true,
     "comma-separated methods, the first the baseline; each ALGO or ALGO:KEY=VALUE[:KEY=VALUE...] "
     "(default: dapo,dapo_forking,gtpo,grpo_s)"},
    {"--json", true, "also write the result as JSON to FILE (docs/probe.md)"},
    device_flag("train.device, cpu; same as train.device=VALUE")};

std::vector<std::string> split(const std::string& list, char separator) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t end = list.find(separator, at);
    out.push_back(list.substr(at, end - at));
    if (end == std::string::npos) return out;
    at = end + 1;
  }
}

// "gtpo:gtpo.alpha2=0" → the method's config: the run config with rl.algo=gtpo (its defaults) and the keys.
rl::ProbeMethod parse_method(const std::string& spec, const std::string& config_path,
                             const rl::ConfigOverrides& run_overrides) {
  const std::vector<std::string> parts = split(spec, ':');
  GTPO_CHECK(!parts[0].empty(), "probe: --methods: an empty method name in '", spec, "'");
  rl::ConfigOverrides overrides = run_overrides;
  overrides.emplace_back("rl.algo", parts[0]);
  for (size_t p = 1; p < parts.size(); ++p) {
    GTPO_CHECK(rl::is_override(parts[p]), "probe: --methods: '", parts[p], "' in '", spec,
               "' is not KEY=VALUE (e.g. gtpo:gtpo.alpha2=0)");
    overrides.push_back(rl::split_override(parts[p]));
  }
  return {spec, rl::load_run_config(config_path, overrides).rl};
}

}  // namespace

int run_probe(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo probe CONFIG.yaml [section.key=value ...] [--checkpoint DIR] [--methods LIST]",
          "Samples train.prompts_per_step prompts x sampler.group_size at the config's sampler\n"
          "settings (every group kept) and reports the token entropy, the share of groups with\n"
          "mixed rewards, and each method's policy gradient on those rollouts: its cosine with the\n"
          "first method's, beside the noise floor (the first method's cosine with itself on an\n"
          "independent batch). Nothing is trained or written but --json."))
    return 0;
  GTPO_CHECK(args.positionals().size() == 1, "probe: expected one CONFIG.yaml (see --help)");
  const std::string path = args.positionals()[0];
  rl::ConfigOverrides overrides = args.overrides();
  add_device_override(args, overrides);
  if (args.has("--checkpoint")) overrides.emplace_back("train.init_from", args.get("--checkpoint", ""));
  rl::RunConfig config = rl::load_run_config(path, overrides);
  std::vector<rl::ProbeMethod> methods;
  for (const std::string& spec : split(args.get("--methods", "dapo,dapo_forking,gtpo,grpo_s"), ','))
    methods.push_back(parse_method(spec, path, overrides));
  if (!config.teacher.path.empty())
    std::fprintf(stderr,
                 "probe: teacher.path is not used: the gradients are of the reward functions' rewards\n");
  print_config_notes(config);
  RunObjects run = build_run(config);
  print_warnings(run);
  const rl::ProbeResult result = rl::run_probe(*run.model, *run.tokenizer, *run.source, config, methods);
  std::fputs(rl::probe_table(result).c_str(), stdout);
  if (args.has("--json"))
    io::write_file_atomic(args.get("--json", ""), rl::probe_json(result).dump(2) + "\n");
  return 0;
}

}  // namespace gtpo::apps
