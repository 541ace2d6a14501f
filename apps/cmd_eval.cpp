// gtpo eval: greedy accuracy, mean@k and unbiased pass@k of a checkpoint on a task's test split or a
// JSONL dataset, with every sample written out.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "data/tasks/registry.h"
#include "model/checkpoint.h"
#include "rl/evaluate.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    {"--checkpoint", true, "checkpoint directory (required)"},
    {"--data", true, "JSONL problems ({\"prompt\", \"answer\"} or GSM8K {\"question\", \"answer\"})"},
    {"--task", true, "a task generator's test split instead of --data (arith, countdown, chain)"},
    {"-k", true, "samples per problem for mean@k and pass@k, k = 1, 2, 4, ..., K (default 4; 0 = greedy only)"},
    {"--problems", true, "number of problems (default 200)"},
    {"--temperature", true, "sampling temperature for the k samples (default 1)"},
    {"--max-new-tokens", true, "generation limit (default 64)"},
    {"--seed", true, "sampling seed (default 0)"},
    {"--out", true, "per-problem results JSONL (default: none)"},
    device_flag("cpu")};
}

int run_eval(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.help()) {
    std::fputs(usage_text("gtpo eval --checkpoint DIR (--data FILE.jsonl | --task NAME [task.KEY=VALUE ...]) [-k K]",
                          "Greedy accuracy, mean@k and the unbiased pass@k estimator (Chen et al. 2021) over test\n"
                          "problems. Task options (e.g. difficulty=3) are given as KEY=VALUE.",
                          kFlags).c_str(), stdout);
    return 0;
  }
  GTPO_CHECK(args.has("--data") != args.has("--task"), "eval: give exactly one of --data and --task");
  const Device device = device_from(args);
  prepare_device(device);
  model::LoadedModel m = model::load_model(args.require("--checkpoint"), device);
  GTPO_CHECK(m.tokenizer != nullptr, "eval: the checkpoint has no tokenizer");
  std::unique_ptr<rl::ProblemSource> source;
  if (args.has("--data")) {
    const std::string file = args.get("--data", "");
    source = std::make_unique<rl::ProblemSource>(rl::ProblemSource::from_files(file, file));
  } else {
    data::TaskOptions options;
    for (const auto& [k, v] : args.overrides()) options.set(k.rfind("task.", 0) == 0 ? k.substr(5) : k, v);
    source = std::make_unique<rl::ProblemSource>(
        rl::ProblemSource::from_task(data::make_task(args.get("--task", ""), options), 0));
  }
  rl::EvalOptions o;
  o.problems = args.get_int("--problems", 200);
  o.k = args.get_int("-k", 4);
  o.temperature = static_cast<float>(args.get_double("--temperature", 1.0));
  o.max_new_tokens = args.get_int("--max-new-tokens", 64);
  o.seed = static_cast<uint64_t>(args.get_int("--seed", 0));
  rl::EvalResult e = rl::evaluate(*m.model, *m.tokenizer, *source, o);
  std::printf("problems %lld | greedy accuracy %.4f | mean@%lld %.4f", static_cast<long long>(e.problems),
              e.greedy_accuracy, static_cast<long long>(o.k), e.mean_at_k);
  for (const auto& [k, v] : e.pass_at_k) std::printf(" | pass@%lld %.4f", static_cast<long long>(k), v);
  std::printf(" | %.1fs\n", e.seconds);
  if (args.has("--out")) {
    std::ostringstream out;
    for (const rl::EvalRecord& r : e.records)
      out << nlohmann::json({{"index", r.index}, {"prompt", r.prompt}, {"answer", r.answer},
                             {"greedy", r.greedy_completion}, {"greedy_correct", r.greedy_correct},
                             {"samples", r.sample_completions}, {"samples_correct", r.sample_correct}})
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    io::write_file_atomic(args.get("--out", ""), out.str());
  }
  return 0;
}

}  // namespace gtpo::apps
