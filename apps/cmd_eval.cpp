// gtpo eval: greedy accuracy, mean@k and unbiased pass@k of a checkpoint on a task's test split or a
// JSONL dataset, with every sample written out.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <limits>
#include <sstream>

#include "apps/args.h"
#include "apps/checkpoint_input.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "data/tasks/registry.h"
#include "model/checkpoint.h"
#include "rl/evaluate.h"
#include "rl/prompt_template.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    checkpoint_flag(),
    {"--data", true, "JSONL problems ({\"prompt\", \"answer\"} or GSM8K {\"question\", \"answer\"})"},
    {"--task", true,
     "a task generator's test split instead of --data (arith, chain, countdown, progression)"},
    {"-k", true,
     "samples per problem for mean@k and pass@k, k = 1, 2, 4, ..., K (default: the run's eval.k, else 4; 0 = "
     "greedy only)"},
    {"--problems", true, "number of problems (default: the run's eval.num_problems, else 200)"},
    {"--sampled-problems", true, "of those, the first this many get the k samples (default: all)"},
    {"--temperature", true,
     "sampling temperature for the k samples (default: the run's eval.temperature, else 1)"},
    {"--max-new-tokens", true,
     "generation limit (default: the run's eval.max_new_tokens or sampler.max_new_tokens, "
     "else the config default, 48)"},
    {"--seed", true, "sampling seed (default: the run's train.seed, else 0)"},
    {"--out", true, "per-problem results JSONL (default: none)"},
    chat_template_flag(),
    threads_flag(),
    device_flag("cpu")};

// The problems: --data, --task (with the run's own options when it is the run's task), or the run's task.
// Prompts are rendered as --chat-template says: by default as the run rendered them (its prompt.template),
// else through the directory's chat template.
std::unique_ptr<rl::ProblemSource> problem_source(const Args& args, const CheckpointInput& in) {
  GTPO_CHECK(!(args.has("--data") && args.has("--task")), "eval: give at most one of --data and --task");
  const std::optional<rl::RunConfig>& run = in.run_config;
  const data::chat::PromptFormat format = rl::prompt_format(chosen_prompt_template(args, in, "eval"), in.dir);
  // Task options set a generator; problems read from a file have none, so such a setting would do nothing.
  const auto reject_options = [&](const std::string& from) {
    GTPO_CHECK(args.overrides().empty(), "eval: '", args.overrides().front().first, "=",
               args.overrides().front().second,
               "' sets a task generator's option, but the problems come from ", from,
               ", which has none (give --task NAME to evaluate a generator)");
  };
  if (args.has("--data")) {
    const std::string file = args.get("--data", "");
    reject_options("--data " + file);
    return std::make_unique<rl::ProblemSource>(rl::ProblemSource::from_files(file, file, format));
  }
  GTPO_CHECK(args.has("--task") || run.has_value(),
             "eval: give --data or --task (this checkpoint has no run_config.yaml to take the task from)");
  const std::string name = args.get("--task", run ? run->task.name : "");
  const bool runs_task = run && run->task.name == name;
  if (runs_task && !run->task.test_file.empty()) {
    reject_options("the run's test file " + run->task.test_file);
    std::fprintf(stderr, "eval: the run's test file %s\n", run->task.test_file.c_str());
    return std::make_unique<rl::ProblemSource>(
        rl::ProblemSource::from_files(run->task.test_file, run->task.test_file, format));
  }
  data::TaskOptions options = runs_task ? run->task.options : data::TaskOptions{};
  for (const auto& [k, v] : args.overrides()) options.set(k.rfind("task.", 0) == 0 ? k.substr(5) : k, v);
  std::unique_ptr<data::Task> task = data::make_task(name, options);  // its errors name a wrong option
  if (!options.values().empty()) {  // what is evaluated, after the command line's settings
    std::string text;
    for (const auto& [k, v] : options.values()) text += (text.empty() ? "" : ", ") + k + "=" + v;
    const char* whose = !runs_task                 ? "the command line's"
                        : args.overrides().empty() ? "the run's"
                                                   : "the run's, with the command line's KEY=VALUE over them";
    std::fprintf(stderr, "eval: task %s with options %s (%s)\n", name.c_str(), text.c_str(), whose);
  }
  return std::make_unique<rl::ProblemSource>(rl::ProblemSource::from_task(std::move(task), 0, format));
}
}  // namespace

int run_eval(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo eval --checkpoint DIR|RUN_DIR [--data FILE.jsonl | --task NAME [task.KEY=VALUE ...]] [-k K]",
          "Greedy accuracy, mean@k and the unbiased pass@k estimator (Chen et al. 2021) over test\n"
          "problems. A training checkpoint (or a run directory) brings its run config: without\n"
          "--data or --task the run's own task is used, --task of the run's task keeps its task\n"
          "options, and the eval settings default to the run's. Task options (e.g. difficulty=3)\n"
          "are given as KEY=VALUE and override the run's."))
    return 0;
  args.reject_unused("eval", false, true);  // KEY=VALUE: task options, checked by the task source
  CheckpointInput in = load_checkpoint_input(args, "eval");
  model::LoadedModel& m = in.loaded;
  GTPO_CHECK(m.tokenizer != nullptr, "eval: the checkpoint has no tokenizer");
  std::unique_ptr<rl::ProblemSource> source = problem_source(args, in);
  // The run's eval settings, else the run config's defaults: one place for every default.
  rl::EvalOptions o = rl::eval_options(in.run_config ? *in.run_config : rl::RunConfig{});
  o.problems = args.get_int("--problems", o.problems, 1, 1 << 24);
  o.k = args.get_int("-k", o.k, 0, 1 << 16);
  o.sampled_problems = args.get_int("--sampled-problems", 0, 0, 1 << 24);
  o.temperature = static_cast<float>(args.get_double("--temperature", o.temperature));
  GTPO_CHECK(o.temperature >= 0.0f, "eval: --temperature must be >= 0, got ", o.temperature);
  o.max_new_tokens = args.get_int("--max-new-tokens", o.max_new_tokens, 1, m.model->config().max_position_embeddings);
  o.seed = static_cast<uint64_t>(args.get_int("--seed", static_cast<int64_t>(o.seed), 0,
                                              std::numeric_limits<int64_t>::max()));
  rl::EvalResult e = rl::evaluate(*m.model, *m.tokenizer, *source, o);
  std::printf("problems %lld | greedy accuracy %.4f | mean@%lld %.4f on %lld",
              static_cast<long long>(e.problems), e.greedy_accuracy, static_cast<long long>(o.k), e.mean_at_k,
              static_cast<long long>(e.sampled_problems));
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
