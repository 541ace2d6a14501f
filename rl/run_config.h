// The run configuration of `gtpo sft`, `gtpo train` and `gtpo eval`: a YAML file of sections (model,
// tokenizer, task, prompt, sampler, rl, gtpo, grpo_s, dapo_forking, optim, sft, train, eval, log) plus dotted
// command-line overrides ("train.steps=200", "~train.steps" back to the default; list items as
// "reward.functions[1].weight=0.5", "~reward.functions" drops the whole list). Every key has a default,
// so a file holds only what a user changes. Every key is one row of one schema (config::Key: name, type,
// default, meaning, parse, print), declared beside the code that reads it: the model section in
// model/model_config.cpp, task options in each task's file, sampler rows in rl/rollout_phase.cpp, rl.* in
// rl/math/rl_config.cpp, each algorithm's own section in its rl/math/algorithms/ file, optim/train/log rows
// in rl/trainer_keys.cpp (the trainer, rl/run/, reads them), sft in rl/sft.cpp, eval in rl/evaluate.cpp;
// rl/run_config_schema.cpp only lists the owners. docs/configuration.md is generated from the rows
// (config_reference_markdown) and a test keeps the two equal.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/tasks/options.h"
#include "model/model_config.h"
#include "rl/math/algorithm_registry.h"  // defaults_for
#include "rl/math/rl_config.h"
#include "runtime/backend.h"
#include "runtime/config_codec.h"
#include "runtime/optim/lr_schedule.h"

namespace gtpo::rl {

// The algorithm whose defaults a config starts from when it does not name one (rl.algo).
inline constexpr const char* kDefaultAlgo = "gtpo";

enum class TokenizerKind { Char, Byte, File };

struct TokenizerSection {
  TokenizerKind kind = TokenizerKind::Char;
  std::string alphabet;  // char tokenizer's characters; empty = the task's alphabet (Task::alphabet())
  std::string file;      // tokenizer.json, read when kind is File
};

struct TaskSection {
  std::string name = "arith";
  std::string train_file;  // JSONL problems instead of the generator (both files or neither)
  std::string test_file;
  bool shuffle = true;        // train_file rows in a fresh seeded order each epoch (a pass over the file)
  data::TaskOptions options;  // every other key of the section, validated by make_task at load time
};

// How prompts become model text (rl/prompt_template.cpp reads it).
struct PromptSection {
  std::string template_path_or_pattern;  // prompt.template: a Jinja chat template file, or a "{prompt}" pattern
};

struct SamplerSection {
  int64_t group_size = 8;       // G responses per prompt
  double temperature = 1.0;     // 0 = greedy
  int64_t top_k = 0;            // 0 = off
  double top_p = 1.0;           // 1 = off
  int64_t max_new_tokens = 48;  // L_max: the one place it is stored
};

// One reward function of the reward section (rl/reward.h). With a command it is external: a long-lived
// process speaking JSON lines (docs/rewards.md); without one, NAME is a built-in (correct, format, length).
struct RewardFunctionConfig {
  std::string name;
  double weight = 1.0;
  std::string command;
  bool token_rewards = false;  // it gives one reward per completion token (docs/rewards.md)
};

struct RewardSection {
  // Empty = the task's verifier alone with weight 1 (r_i = c_i), which is also what every algorithm's
  // outcome reward is without this section.
  std::vector<RewardFunctionConfig> functions;
  double correct_threshold = 0.5;  // c_i = r_i >= this when no function gives a correct flag
  double timeout_s = 60.0;         // longest wait for one reply line of an external reward
  double token_gamma = 1.0;        // discount of the token rewards' return-to-go (docs/algorithms.md)
};

// On-policy distillation (rl/distillation.h): a frozen teacher scores every sampled token, and each token's
// reward is weight · (log π_teacher − log π_student). Off while path is empty.
struct TeacherSection {
  std::string path;     // a model directory: Hugging Face's or a gtpo checkpoint, of the student's vocabulary
  double weight = 1.0;  // of the per-token reward −(log π_s − log π_t), beside reward.functions' weights
};

struct OptimSection {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double grad_clip = 1.0;  // max global grad norm; 0 = off
  optim::LrScheduleKind schedule = optim::LrScheduleKind::constant;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;  // cosine floor as a fraction of lr
};

struct SftSection {
  int64_t steps = 0;  // 0 = no SFT
  int64_t batch_size = 32;
  double lr = 3e-3;
  optim::LrScheduleKind schedule = optim::LrScheduleKind::cosine;
  int64_t warmup_steps = 10;
  double weight_decay = 0.0;
  double beta2 = 0.99;            // AdamW β2 of the warm start
  int64_t micro_batch_tokens = 0; // padded tokens per forward/backward; 0 = no bound
  int64_t micro_batch_memory_mb = 512;  // with micro_batch_tokens 0: the activation memory it bounds; 0 = none
  bool group_by_length = true;    // micro-batches of similar lengths, cut where padding costs more
  int64_t eval_every = 0;  // 0 = only at the end
};

struct TrainSection {
  int64_t steps = 100;
  int64_t prompts_per_step = 8;
  uint64_t seed = 0;
  std::string out_dir = "runs/default";
  std::string init_from;          // checkpoint dir; empty = build from the model section, init with seed
  int64_t checkpoint_every = 50;  // 0 = only at the end
  int64_t keep_checkpoints = 0;   // 0 = keep every checkpoint
  int64_t sample_every = 10;      // 0 = never
  int64_t threads = 0;            // 0 = library default
  Device device = Device::cpu;    // where the model lives and every op runs
  MatmulPrecision matmul_precision = MatmulPrecision::fp32;  // tf32/bf16: GPU-only speed modes
  bool deterministic = true;      // GPU: bitwise-repeatable kernels and cuBLAS (the CPU always is)
  bool exact_decode = false;      // CPU: decode attention in the training forward's order (BackendOptions)
  double collective_timeout_s = 600;  // data-parallel runs: a collective waiting longer aborts the job
};

struct EvalSection {
  int64_t every = 20;  // 0 = only at start and end
  int64_t num_problems = 200;
  int64_t k = 4;  // pass@k for k in 1, 2, 4, ..., K
  double temperature = 1.0;
  int64_t max_new_tokens = 0;  // 0 = sampler.max_new_tokens
  int64_t final_problems = 0;  // after the last RL step; 0 = num_problems
  int64_t final_sampled_problems = 0;  // of those, with k samples; 0 = all
  bool before_rl = true;
};

struct LogSection {
  int64_t every = 10;  // a full step line every this many steps (metrics.jsonl has every step)
  bool progress = true;
  int64_t samples = 2;  // completions logged per sample_every step
  bool tensorboard = false;  // RUN/tensorboard/ event file, rewritten with the report
};

struct RunConfig {
  // Absent only when train.init_from names a checkpoint (the model comes from there). vocab_size is 0
  // when the section leaves it out: the tokenizer's vocabulary size, filled in once the tokenizer exists.
  std::optional<model::ModelConfig> model;
  TokenizerSection tokenizer;
  TaskSection task;
  PromptSection prompt;
  SamplerSection sampler;
  RlConfig rl = defaults_for(kDefaultAlgo);  // rl.*, gtpo.*, grpo_s.*, dapo_forking.*
  RewardSection reward;
  TeacherSection teacher;
  OptimSection optim;
  SftSection sft;
  TrainSection train;
  EvalSection eval;
  LogSection log;
  // What parsing decided on the user's behalf (options dropped by a task.name override), for the console.
  std::vector<std::string> notes;
};

using RunKey = config::Key<RunConfig>;

using ConfigOverrides = std::vector<std::pair<std::string, std::string>>;  // ("train.steps", "200")

// Reads PATH and applies OVERRIDES after the file, with the same validation. Errors are gtpo::Error naming
// the file (and line where known) or "command line", the section.key, what was expected and the value.
RunConfig load_run_config(const std::string& path, const ConfigOverrides& overrides = {});
// As load_run_config on text; WHERE names its source in error messages.
RunConfig parse_run_config(const std::string& yaml_text, const std::string& where,
                           const ConfigOverrides& overrides = {});

// Splits "section.key=value" (a command-line override) at its first '='; "~section.key" (back to the
// default) becomes ("~section.key", "").
std::pair<std::string, std::string> split_override(const std::string& arg);
// True for the arguments split_override takes: "x.y=..." or "~x.y".
bool is_override(const std::string& arg);

// Every key with its value (and the model section when there is one); parse_run_config reads it back to
// the same config. Written as config.yaml into run directories.
std::string resolved_config_yaml(const RunConfig& config);

struct ConfigKeyDoc {
  std::string key;            // "train.steps"
  std::string type;           // "integer >= 0", "constant|constant_with_warmup|cosine", ...
  std::string default_value;  // as it would be written in YAML
  std::string meaning;
};

// Every key, in documentation order. RL keys show kDefaultAlgo's defaults; config_reference_markdown adds
// the per-algorithm table for the keys whose defaults differ between algorithms.
std::vector<ConfigKeyDoc> config_reference();
// The content of docs/configuration.md.
std::string config_reference_markdown();

}  // namespace gtpo::rl
