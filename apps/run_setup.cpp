#include "apps/run_setup.h"

#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "apps/checkpoint_input.h"
#include "apps/cpu_load.h"
#include "apps/device_setup.h"
#include "data/tasks/registry.h"
#include "data/tokenizer/char_tokenizer.h"
#include "model/checkpoint.h"
#include "rl/distillation.h"
#include "rl/prompt_template.h"
#include "rl/run/run_checks.h"
#include "runtime/error.h"
#include "runtime/io/subprocess.h"

namespace gtpo::apps {

namespace fs = std::filesystem;

namespace {
std::unique_ptr<data::Tokenizer> make_tokenizer(const rl::TokenizerSection& t, const rl::ProblemSource& source,
                                                int64_t vocab_hint) {
  switch (t.kind) {
    case rl::TokenizerKind::Char:
      return std::make_unique<data::CharTokenizer>(t.alphabet.empty() ? source.alphabet() : t.alphabet);
    case rl::TokenizerKind::Byte:
      return data::make_byte_tokenizer(static_cast<int32_t>(std::max<int64_t>(vocab_hint, 259)));
    case rl::TokenizerKind::File: return data::load_tokenizer(t.file);
  }
  fail("tokenizer: unknown kind");
}

// A model this large is a pretrained one (the toy tasks' models have well under a million parameters).
constexpr int64_t kPretrainedSizeParameters = 20'000'000;

// "section.key" (or "section.list[i].key") -> its value, from gtpo's own YAML (resolved_config_yaml,
// model_config_to_yaml): sections, their "  key: value" lines, and lists of "    - key: value" items whose
// other keys follow at 6 spaces.
std::map<std::string, std::string> yaml_entries(const std::string& yaml) {
  std::map<std::string, std::string> out;
  std::istringstream in(yaml);
  std::string section, list;
  int64_t item = -1;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t indent = line.find_first_not_of(' ');
    const bool starts_item = line.compare(indent, 2, "- ") == 0;
    const size_t key_at = starts_item ? indent + 2 : indent, colon = line.find(':', key_at);
    const std::string key = line.substr(key_at, colon - key_at);
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (indent == 0) {
      section = key;
    } else if (indent == 2 && !starts_item) {
      list = value.empty() ? key : "";  // "  functions:" opens a list
      item = -1;
      if (list.empty()) out[section + "." + key] = value;
    } else {
      item += starts_item ? 1 : 0;
      out[section + "." + list + "[" + std::to_string(item) + "]." + key] = value;
    }
  }
  return out;
}

// The keys whose values differ between a config's model section and a checkpoint's model (vocab_size 0,
// "the tokenizer's", differs from nothing), for the warning that the section is ignored.
std::vector<std::string> differing_model_keys(model::ModelConfig section,
                                              const model::ModelConfig& checkpoint) {
  if (section.vocab_size == 0) section.vocab_size = checkpoint.vocab_size;
  std::vector<std::string> keys;
  for (const ValueChange& c :
       yaml_value_changes(model::model_config_to_yaml(section), model::model_config_to_yaml(checkpoint))) {
    const std::string key = c.key.substr(c.key.find('.') + 1);  // "model.hidden_size" -> "hidden_size"
    keys.push_back(key + " (config " + c.before + ", checkpoint " + c.after + ")");
  }
  return keys;
}

void stop_handler(int signal) {
  if (rl::stop_requested()) {
    io::Subprocess::kill_all_from_signal_handler();  // no reward process may outlive us
    std::_Exit(128 + signal);
  }
  rl::request_stop(signal);
  static const char msg[] =
      "\nstop requested: finishing the current step and writing a checkpoint (the same signal again kills)\n";
  [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
}
}  // namespace

void add_device_override(const Args& args, rl::ConfigOverrides& overrides) {
  if (!args.has("--device")) return;
  const std::string value = args.get("--device", "");
  parse_device("--device", value);
  overrides.emplace_back("train.device", value);
}

void install_stop_handler() {
  struct sigaction action {};
  action.sa_handler = stop_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // blocking reads and writes carry on; the loop polls the flag between steps
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

std::unique_ptr<rl::ProblemSource> make_problem_source(const rl::RunConfig& c) {
  const data::chat::PromptFormat format = rl::prompt_format_for_run(c);
  if (!c.task.train_file.empty())
    return std::make_unique<rl::ProblemSource>(
        rl::ProblemSource::from_files(c.task.train_file, c.task.test_file, format,
                                      c.task.shuffle ? std::optional<uint64_t>(c.train.seed) : std::nullopt));
  return std::make_unique<rl::ProblemSource>(
      rl::ProblemSource::from_task(data::make_task(c.task.name, c.task.options), c.train.seed, format));
}

std::string tokenizer_where(const rl::RunConfig& c) {
  switch (c.tokenizer.kind) {
    case rl::TokenizerKind::File: return "tokenizer.file " + c.tokenizer.file;
    case rl::TokenizerKind::Byte: return "tokenizer.kind byte";
    case rl::TokenizerKind::Char: return "tokenizer.kind char";
  }
  return "tokenizer";
}

// A default optim.lr (sized for the tiny models gtpo trains from scratch) is far too large for a model
// someone pretrained: a Hugging Face directory (no gtpo config.yaml) or any model of 20M+ parameters; and so
// is any lr from 1e-4 on that large (a config tuned on a tiny fixture, pointed at a real model).
void warn_default_lr_for_pretrained(const rl::RunConfig& c, const std::string& dir,
                                    const model::Transformer& m, RunObjects& run) {
  const bool is_default = c.optim.lr == rl::OptimSection{}.lr;
  const bool hugging_face = !fs::exists(fs::path(dir) / "config.yaml");
  const int64_t parameters = m.parameters().numel();
  const bool large = parameters >= kPretrainedSizeParameters;
  if (!(is_default && (hugging_face || large)) && !(large && c.optim.lr >= 1e-4)) return;
  run.warnings.push_back(
      "optim.lr is " + config::format_double(c.optim.lr) +
      (is_default ? ", its default for tiny models trained from scratch," : ",") +
      " while train.init_from starts from " + (hugging_face ? "a Hugging Face model" : "a trained model") +
      " of " + std::to_string(parameters) +
      " parameters: fine-tuning one usually wants 1e-6 to 1e-5 (TRL's GRPO default is 1e-6); "
      "set optim.lr");
}

void init_model_from_section(rl::RunConfig& c, const rl::ProblemSource& source, RunObjects& run) {
  GTPO_CHECK(c.model.has_value(), "the config needs a model: section or train.init_from");
  run.tokenizer = make_tokenizer(c.tokenizer, source, c.model->vocab_size);
  if (c.model->vocab_size == 0) c.model->vocab_size = run.tokenizer->vocab_size();
  model::validate_model_config(*c.model, "model section");
  rl::check_tokenizer_fits(*run.tokenizer, tokenizer_where(c), c.model->vocab_size, "model.vocab_size");
  run.model = std::make_unique<model::Transformer>(*c.model, c.train.device);
  run.model->init_weights(c.train.seed);
}

std::vector<ValueChange> yaml_value_changes(const std::string& before, const std::string& after) {
  const std::map<std::string, std::string> old_values = yaml_entries(before),
                                           new_values = yaml_entries(after);
  std::set<std::string> keys;
  for (const auto& [key, value] : old_values) keys.insert(key);
  for (const auto& [key, value] : new_values) keys.insert(key);
  std::vector<ValueChange> changes;
  for (const std::string& key : keys) {
    const auto a = old_values.find(key), b = new_values.find(key);
    ValueChange c{key, a == old_values.end() ? "unset" : a->second,
                  b == new_values.end() ? "unset" : b->second};
    if (c.before != c.after) changes.push_back(std::move(c));
  }
  return changes;
}

RunObjects build_run(rl::RunConfig& c) {
  RunObjects run;
  if (c.train.threads > 0) omp_set_num_threads(static_cast<int>(c.train.threads));
  if (c.train.threads == 0 && c.train.device == Device::cpu)
    if (std::string note = fit_threads_to_free_cores(); !note.empty()) run.notes.push_back(std::move(note));
  // First, so that a missing GPU is reported before any work (and before the task is built).
  prepare_device(c.train.device,
                 BackendOptions{c.train.matmul_precision, c.train.deterministic, c.train.exact_decode});
  if (c.train.exact_decode && c.train.device != Device::cpu)
    run.notes.push_back("train.exact_decode has no effect on " + std::string(device_name(c.train.device)) +
                        " (it orders the CPU's decode attention)");
  bool tokenizer_from_checkpoint = false;
  // Before the prompt format, which reads the chat template beside it: a typo is "not a directory".
  if (!c.train.init_from.empty())
    require_model_directory(resolve_checkpoint_dir(c.train.init_from), "train.init_from");
  run.source = make_problem_source(c);

  if (!c.train.init_from.empty()) {
    const std::string from = resolve_checkpoint_dir(c.train.init_from);
    model::LoadedModel loaded = model::load_model(from, c.train.device);
    run.model = std::move(loaded.model);
    tokenizer_from_checkpoint = loaded.tokenizer != nullptr;
    run.tokenizer = loaded.tokenizer ? std::move(loaded.tokenizer)
                                     : make_tokenizer(c.tokenizer, *run.source, run.model->config().vocab_size);
    if (c.model) {
      const std::vector<std::string> keys = differing_model_keys(*c.model, run.model->config());
      if (!keys.empty())
        run.warnings.push_back("the config's model: section is ignored: train.init_from " +
                               c.train.init_from + " brings its own model, which differs in " +
                               config::join(keys));
    }
    c.model = run.model->config();
    warn_default_lr_for_pretrained(c, from, *run.model, run);
  } else {
    init_model_from_section(c, *run.source, run);
  }
  const std::string where = tokenizer_from_checkpoint
                                ? "the tokenizer of train.init_from " + c.train.init_from
                                : tokenizer_where(c);
  // Before any work: a mismatch found at the first rollout would come after all of SFT.
  rl::check_run_consistency(c, run.model->config(), *run.tokenizer, where, *run.source);
  run.teacher = rl::load_teacher(c.teacher, *run.tokenizer, where, c.train.device);
  return run;
}

void print_config_notes(const rl::RunConfig& config) {
  for (const std::string& note : config.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
}

void print_warnings(const RunObjects& run) {
  for (const std::string& note : run.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  for (const std::string& warning : run.warnings) std::fprintf(stderr, "warning: %s\n", warning.c_str());
}

}  // namespace gtpo::apps
