#include "apps/run_setup.h"

#include <omp.h>

#include <unistd.h>

#include <csignal>
#include <cstdio>

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

void print_config_notes(const rl::RunConfig& config) {
  for (const std::string& note : config.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
}

}  // namespace gtpo::apps
