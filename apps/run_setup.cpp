#include "apps/run_setup.h"

#include <omp.h>

#include <unistd.h>

#include <csignal>

#include "apps/device_setup.h"
#include "data/tasks/registry.h"
#include "data/tokenizer/char_tokenizer.h"
#include "model/checkpoint.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
std::unique_ptr<data::Tokenizer> make_tokenizer(const rl::TokenizerSection& t, const rl::ProblemSource& source,
                                                int64_t vocab_hint) {
  switch (t.kind) {
    case rl::TokenizerKind::Char:
      return std::make_unique<data::CharTokenizer>(t.alphabet.empty() ? source.alphabet() : t.alphabet);
    case rl::TokenizerKind::Byte:
      return data::make_byte_tokenizer(static_cast<int32_t>(std::max<int64_t>(vocab_hint, 259)));
    case rl::TokenizerKind::File:
      return data::load_tokenizer(t.file);
  }
  fail("tokenizer: unknown kind");
}

void stop_handler(int) {
  if (rl::stop_requested()) std::_Exit(130);
  rl::request_stop();
  static const char msg[] = "\ninterrupt: finishing the current step and writing a checkpoint (^C again to kill)\n";
  [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
}
}  // namespace

void add_device_override(const Args& args, rl::ConfigOverrides& overrides) {
  if (!args.has("--device")) return;
  const std::string value = args.get("--device", "");
  parse_device("--device", value);
  overrides.emplace_back("train.device", value);
}

void install_stop_handler() { std::signal(SIGINT, stop_handler); }

RunObjects build_run(rl::RunConfig& c) {
  if (c.train.threads > 0) omp_set_num_threads(static_cast<int>(c.train.threads));
  // First, so that a missing GPU is reported before any work (and before the task is built).
  prepare_device(c.train.device, BackendOptions{c.train.matmul_precision, c.train.deterministic});
  RunObjects run;
  if (!c.task.train_file.empty())
    run.source = std::make_unique<rl::ProblemSource>(rl::ProblemSource::from_files(c.task.train_file, c.task.test_file));
  else
    run.source = std::make_unique<rl::ProblemSource>(
        rl::ProblemSource::from_task(data::make_task(c.task.name, c.task.options), c.train.seed));

  if (!c.train.init_from.empty()) {
    model::LoadedModel loaded = model::load_model(c.train.init_from, c.train.device);
    run.model = std::move(loaded.model);
    run.tokenizer = loaded.tokenizer ? std::move(loaded.tokenizer)
                                     : make_tokenizer(c.tokenizer, *run.source, run.model->config().vocab_size);
    c.model = run.model->config();
  } else {
    GTPO_CHECK(c.model.has_value(), "the config needs a model: section or train.init_from");
    run.tokenizer = make_tokenizer(c.tokenizer, *run.source, c.model->vocab_size);
    if (c.model->vocab_size == 0) c.model->vocab_size = run.tokenizer->vocab_size();
    model::validate_model_config(*c.model, "model section");
    run.model = std::make_unique<model::Transformer>(*c.model, c.train.device);
    run.model->init_weights(c.train.seed);
  }
  GTPO_CHECK(run.tokenizer->vocab_size() <= run.model->config().vocab_size, "the tokenizer has ",
             run.tokenizer->vocab_size(), " tokens but model.vocab_size is ", run.model->config().vocab_size);
  return run;
}

rl::TrainerOptions trainer_options(const rl::RunConfig& c) {
  rl::TrainerOptions o;
  o.rl = c.rl;
  o.sampling.group_size = c.sampler.group_size;
  o.sampling.temperature = static_cast<float>(c.sampler.temperature);
  o.sampling.top_k = c.sampler.top_k;
  o.sampling.top_p = static_cast<float>(c.sampler.top_p);
  o.sampling.max_new_tokens = c.sampler.max_new_tokens;
  o.adam.lr = static_cast<float>(c.optim.lr);
  o.adam.beta1 = static_cast<float>(c.optim.beta1);
  o.adam.beta2 = static_cast<float>(c.optim.beta2);
  o.adam.eps = static_cast<float>(c.optim.eps);
  o.adam.weight_decay = static_cast<float>(c.optim.weight_decay);
  o.schedule = {c.optim.schedule, static_cast<float>(c.optim.lr), c.optim.warmup_steps,
                std::max<int64_t>(c.train.steps, c.optim.warmup_steps + 1), static_cast<float>(c.optim.min_lr_ratio)};
  o.grad_clip = static_cast<float>(c.optim.grad_clip);
  o.sft.steps = c.sft.steps;
  o.sft.batch_size = c.sft.batch_size;
  o.sft.schedule = {c.sft.schedule, static_cast<float>(c.sft.lr), c.sft.warmup_steps,
                    std::max<int64_t>(c.sft.steps, c.sft.warmup_steps + 1), 0.1f};
  o.sft.weight_decay = static_cast<float>(c.sft.weight_decay);
  o.sft.grad_clip = static_cast<float>(c.optim.grad_clip);
  o.steps = c.train.steps;
  o.prompts_per_step = c.train.prompts_per_step;
  o.seed = c.train.seed;
  o.out_dir = c.train.out_dir;
  o.checkpoint_every = c.train.checkpoint_every;
  o.sample_every = c.train.sample_every;
  o.samples_to_log = c.log.samples;
  o.eval_every = c.eval.every;
  o.eval.problems = c.eval.num_problems;
  o.eval.k = c.eval.k;
  o.eval.temperature = static_cast<float>(c.eval.temperature);
  o.eval.max_new_tokens = c.eval.max_new_tokens > 0 ? c.eval.max_new_tokens : c.sampler.max_new_tokens;
  o.eval.seed = c.train.seed;
  o.progress = c.log.progress;
  o.log_every = c.log.every;
  o.sft_eval_every = c.sft.eval_every;
  o.config_yaml = rl::resolved_config_yaml(c);
  return o;
}

}  // namespace gtpo::apps
