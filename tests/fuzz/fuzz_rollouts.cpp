// `gtpo advantages --in ROLLOUTS.jsonl` (apps/rollout_line.cpp): every line read as the command reads it,
// then the advantages of the batch under GRPO and GTPO (which needs the entropies).
#include "apps/rollout_line.h"
#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return gtpo::fuzz::run_one([&] {
    for (const char* algo : {"grpo", "gtpo"}) {
      const gtpo::rl::RlConfig cfg = gtpo::rl::defaults_for(algo);
      const bool needs_entropies = gtpo::rl::find_algorithm(cfg.algo).needs_entropies;
      std::vector<gtpo::rl::Response> batch;
      const std::vector<std::string> lines = gtpo::fuzz::split(text, '\n');
      for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string where = "fuzz.jsonl:" + std::to_string(i + 1);
        nlohmann::ordered_json group;
        gtpo::rl::Response r = gtpo::apps::parse_rollout_line(lines[i], where, group);
        gtpo::rl::validate_response(r, needs_entropies, where);
        batch.push_back(std::move(r));
      }
      if (batch.empty()) return;
      gtpo::rl::BatchContext context;
      context.max_new_tokens = 64;
      (void)gtpo::rl::compute_advantages(batch, cfg, context);
    }
  });
}
