// The YAML run config: defaults, per-algorithm RL defaults, overrides, every error, the resolved-config
// round trip, and docs/configuration.md staying equal to the generated reference.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rl/foreign_names.h"
#include "rl/run/run_checks.h"
#include "rl/run_config.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;

namespace {

const std::string kModel =
    "model: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, max_position_embeddings: 64}\n";

RunConfig parse(const std::string& yaml, const ConfigOverrides& overrides = {}) {
  return parse_run_config(yaml, "run.yaml", overrides);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a config with only a model gets every documented default", "[config]") {
  const RunConfig c = parse(kModel);
  REQUIRE(c.model);
  CHECK(c.model->hidden_size == 32);
  CHECK(c.model->vocab_size == 0);  // left to the tokenizer
  CHECK(c.tokenizer.kind == TokenizerKind::Char);
  CHECK(c.tokenizer.alphabet.empty());
  CHECK(c.task.name == "arith");
  CHECK(c.task.options.values().empty());
  CHECK(c.sampler.group_size == 8);
  CHECK(c.sampler.temperature == 1.0);
  CHECK(c.sampler.top_k == 0);
  CHECK(c.sampler.top_p == 1.0);
  CHECK(c.sampler.max_new_tokens == 48);
  CHECK(c.rl.algo == "gtpo");
  CHECK(c.rl.clip_high == 0.28);
  CHECK(c.optim.lr == 1e-3);
  CHECK(c.optim.beta2 == 0.99);
  CHECK(c.optim.eps == 1e-8);
  CHECK(c.optim.grad_clip == 1.0);
  CHECK(c.optim.schedule == gtpo::optim::LrScheduleKind::constant);
  CHECK(c.optim.min_lr_ratio == 0.1);
  CHECK(c.sft.steps == 0);
  CHECK(c.sft.batch_size == 32);
  CHECK(c.sft.lr == 3e-3);
  CHECK(c.sft.schedule == gtpo::optim::LrScheduleKind::cosine);
  CHECK(c.sft.warmup_steps == 10);
  CHECK(c.train.steps == 100);
  CHECK(c.train.prompts_per_step == 8);
  CHECK(c.train.seed == 0);
  CHECK(c.train.out_dir == "runs/default");
  CHECK(c.train.init_from.empty());
  CHECK(c.train.checkpoint_every == 50);
  CHECK(c.train.sample_every == 10);
  CHECK(c.eval.every == 20);
  CHECK(c.eval.num_problems == 200);
  CHECK(c.eval.k == 4);
  CHECK(c.eval.max_new_tokens == 0);
  CHECK(c.log.every == 10);
  CHECK(c.log.progress);
  CHECK(c.log.samples == 2);
  CHECK(c.train.device == gtpo::Device::cpu);
  CHECK(c.train.matmul_precision == gtpo::MatmulPrecision::fp32);
  CHECK(c.train.deterministic);
}

TEST_CASE("every key is read from its section", "[config]") {
  const RunConfig c = parse(kModel + R"(
tokenizer: {kind: byte}
task: {name: countdown, difficulty: 3}
sampler: {group_size: 4, temperature: 0.7, top_k: 5, top_p: 0.9, max_new_tokens: 64}
optim: {lr: 2e-4, schedule: cosine, warmup_steps: 5, weight_decay: 0.01}
sft: {steps: 30, schedule: constant, warmup_steps: 0}
train: {steps: 7, seed: 18446744073709551615, out_dir: runs/x, threads: 2}
eval: {every: 0, k: 8, temperature: 0}
log: {progress: false, samples: 0}
)");
  CHECK(c.tokenizer.kind == TokenizerKind::Byte);
  CHECK(c.task.name == "countdown");
  CHECK(c.task.options.values().at("difficulty") == "3");
  CHECK(c.sampler.group_size == 4);
  CHECK(c.sampler.temperature == 0.7);
  CHECK(c.sampler.top_k == 5);
  CHECK(c.sampler.top_p == 0.9);
  CHECK(c.sampler.max_new_tokens == 64);
  CHECK(c.optim.lr == 2e-4);
  CHECK(c.optim.schedule == gtpo::optim::LrScheduleKind::cosine);
  CHECK(c.optim.warmup_steps == 5);
  CHECK(c.sft.steps == 30);
  CHECK(c.sft.schedule == gtpo::optim::LrScheduleKind::constant);
  CHECK(c.train.steps == 7);
  CHECK(c.train.seed == 18446744073709551615ull);
  CHECK(c.train.out_dir == "runs/x");
  CHECK(c.train.threads == 2);
  CHECK(c.eval.every == 0);
  CHECK(c.eval.k == 8);
  CHECK(c.eval.temperature == 0.0);
  CHECK_FALSE(c.log.progress);
  CHECK(c.log.samples == 0);
}

TEST_CASE("rl.algo sets the RL defaults before the other RL keys", "[config]") {
  const RunConfig dapo = parse(kModel + "rl: {algo: dapo}\n");
  CHECK(dapo.rl.algo == "dapo");
  CHECK(dapo.rl.clip_low == 0.2);
  CHECK(dapo.rl.clip_high == 0.28);
  CHECK(dapo.rl.dynamic_sampling);
  CHECK(dapo.rl.overlong == Overlong::DapoSoft);
  CHECK(dapo.rl.loss_agg == LossAgg::TokenMean);

  const RunConfig grpo = parse(kModel + "rl: {algo: grpo}\n");
  CHECK(grpo.rl.clip_high == 0.2);
  CHECK_FALSE(grpo.rl.dynamic_sampling);
  CHECK(grpo.rl.overlong == Overlong::None);
  CHECK(grpo.rl.loss_agg == LossAgg::SeqMeanTokenMean);

  CHECK(parse(kModel + "rl: {algo: dr_grpo}\n").rl.loss_agg == LossAgg::SeqMeanTokenSumNorm);
  CHECK(parse(kModel).rl.overlong == Overlong::Grop);

  // Keys written before rl.algo, and in other sections, still win over the algorithm's defaults.
  const RunConfig mixed = parse(kModel +
                                "gtpo: {alpha2: 0.3}\nrl: {clip_high: 0.4, algo: grpo}\n"
                                "dapo_forking: {rho: 0.5}\ngrpo_s: {ratio: geo}\n");
  CHECK(mixed.rl.algo == "grpo");
  CHECK(mixed.rl.clip_high == 0.4);
  CHECK(mixed.rl.gtpo.alpha2 == 0.3);
  CHECK(mixed.rl.dapo_forking.rho == 0.5);
  CHECK(mixed.rl.grpo_s.ratio == MeanKind::Geo);
  CHECK_FALSE(mixed.rl.dynamic_sampling);
}

TEST_CASE("command-line overrides win over the file", "[config]") {
  const std::string file =
      kModel + "train: {steps: 10}\ntask: {difficulty: 2}\nrl: {algo: gtpo, clip_high: 0.3}\n";
  const RunConfig c = parse(file, {{"train.steps", "20"},
                                   {"task.difficulty", "4"},
                                   {"rl.algo", "dapo"},
                                   {"model.hidden_size", "64"},
                                   {"sampler.max_new_tokens", "32"},
                                   {"gtpo.alpha1", "2"}});
  CHECK(c.train.steps == 20);
  CHECK(c.task.options.values().at("difficulty") == "4");
  CHECK(c.rl.algo == "dapo");
  CHECK(c.rl.clip_high == 0.3);  // the file's explicit value survives the override's algorithm switch
  CHECK(c.rl.overlong == Overlong::DapoSoft);
  CHECK(c.rl.gtpo.alpha1 == 2.0);
  REQUIRE(c.model);
  CHECK(c.model->hidden_size == 64);
  CHECK(c.model->intermediate_size == (8 * 64 / 3 + 31) / 32 * 32);  // derived from the overridden width

  CHECK(split_override("train.out_dir=a=b") == std::pair<std::string, std::string>{"train.out_dir", "a=b"});
  CHECK_THROWS_WITH(split_override("train.steps"), Contains("section.key=value"));
  // With train.init_from no model section is needed; overrides alone can supply one.
  CHECK_FALSE(parse("train: {init_from: runs/sft}\n").model);
  CHECK(parse("", {{"model.hidden_size", "16"},
                   {"model.num_hidden_layers", "1"},
                   {"model.num_attention_heads", "2"},
                   {"model.max_position_embeddings", "8"}})
            .model->hidden_size == 16);
}

TEST_CASE("unknown sections and keys are errors that list the valid ones", "[config]") {
  CHECK_THROWS_WITH(parse(kModel + "trian: {steps: 3}\n"), Contains("run.yaml:2: unknown section 'trian'") &&
                                                               Contains("valid sections: model, tokenizer") &&
                                                               Contains("train") && Contains("log"));
  CHECK_THROWS_WITH(parse(kModel + "seed: 1\n"),
                    Contains("unknown section 'seed'") && Contains("train.seed"));
  CHECK_THROWS_WITH(parse(kModel + "train:\n  stpes: 3\n"),
                    Contains("run.yaml:3: unknown key 'stpes' in section 'train'") &&
                        Contains("valid keys: steps, prompts_per_step, seed, out_dir, init_from"));
  CHECK_THROWS_WITH(parse(kModel + "gtpo: {alpha3: 1}\n"),
                    Contains("unknown key 'alpha3' in section 'gtpo'") &&
                        Contains("valid keys: alpha1, alpha2, adv_norm, scope, weights"));
  CHECK_THROWS_WITH(parse(kModel, {{"eval.kk", "2"}}),
                    Contains("command line: unknown key 'kk' in section 'eval'") && Contains("num_problems"));
  CHECK_THROWS_WITH(parse(kModel, {{"evl.k", "2"}}), Contains("command line: unknown section 'evl'"));
  CHECK_THROWS_WITH(parse(kModel, {{"steps", "2"}}), Contains("must look like section.key=value"));
  CHECK_THROWS_WITH(parse("model: {hidden_sise: 3}\n"), Contains("run.yaml") &&
                                                            Contains("unknown key 'hidden_sise'") &&
                                                            Contains("num_hidden_layers"));
  CHECK_THROWS_WITH(parse(kModel + "train: {steps: 1}\ntrain: {steps: 2}\n"),
                    Contains("section 'train' appears twice"));
  CHECK_THROWS_WITH(parse(kModel + "train: {steps: 1, steps: 2}\n"), Contains("train.steps appears twice"));
}

TEST_CASE("unknown names say what was meant: the nearest key, its section, or the TRL or verl name's key",
          "[config]") {
  CHECK_THROWS_WITH(parse(kModel + "trian: {steps: 3}\n"),
                    Contains("unknown section 'trian' (did you mean 'train'?)"));
  CHECK_THROWS_WITH(parse(kModel + "train:\n  stpes: 3\n"),
                    Contains("'stpes' in section 'train' (did you mean 'steps'?)"));
  CHECK_THROWS_WITH(parse(kModel, {{"rl.clip_hihg", "0.3"}}), Contains("(did you mean 'clip_high'?)"));
  CHECK_THROWS_WITH(parse(kModel, {{"rl.lr", "1e-6"}}), Contains("(lr is a key of section optim)"));
  CHECK_THROWS_WITH(parse(kModel, {{"rl.beta", "0.04"}}), Contains("(TRL's beta is gtpo's rl.kl_coef)"));
  CHECK_THROWS_WITH(parse(kModel + "sampler: {num_generations: 4}\n"),
                    Contains("(TRL's num_generations is gtpo's sampler.group_size)"));
  CHECK_THROWS_WITH(parse(kModel, {{"num_generations", "4"}}),
                    Contains("must look like section.key=value") && Contains("gtpo's sampler.group_size"));
  CHECK_THROWS_WITH(
      parse(kModel, {{"trainer.total_training_steps", "5"}}),
      Contains("unknown section 'trainer' (verl's trainer.total_training_steps is gtpo's train.steps)"));
  CHECK_THROWS_WITH(parse(kModel, {{"actor_rollout_ref.actor.clip_ratio_high", "0.28"}}),
                    Contains("gtpo's rl.clip_high"));
  CHECK_THROWS_WITH(parse(kModel, {{"learning.lr", "1e-6"}}), Contains("(lr is a key of section optim)"));
  // Nothing near: no hint, the valid names as before.
  CHECK_THROWS_WITH(parse(kModel, {{"train.zzzzzz", "1"}}),
                    !Contains("did you mean") && Contains("valid keys: steps"));
  // Every TRL / verl row names a real key (the docs column and the hints read the same table).
  for (const ForeignNames& f : foreign_names()) {
    INFO(f.key);
    const std::string key = f.key;
    const std::string section = key.substr(0, key.find('.')), name = key.substr(key.find('.') + 1);
    CHECK(schema::find(section, name) != nullptr);
  }
}

TEST_CASE("a key given twice is an error naming both lines, in every section", "[config]") {
  CHECK_THROWS_WITH(parse("model:\n  hidden_size: 32\n  num_hidden_layers: 1\n  hidden_size: 64\n"),
                    Contains("run.yaml:4: model.hidden_size appears twice (first at run.yaml:2)"));
  CHECK_THROWS_WITH(parse(kModel + "task:\n  name: arith\n  difficulty: 1\n  difficulty: 2\n"),
                    Contains("run.yaml:5: task.difficulty appears twice (first at run.yaml:4)"));
  CHECK_THROWS_WITH(parse(kModel + "gtpo:\n  alpha1: 1\n  alpha1: 2\n"),
                    Contains("run.yaml:4: gtpo.alpha1 appears twice (first at run.yaml:3)"));
}

TEST_CASE("a bool is spelled the same way in every section", "[config]") {
  for (const std::string on : {"true", "on", "yes", "1", "True"}) {
    INFO(on);
    const RunConfig c = parse("model: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, "
                              "max_position_embeddings: 64, tie_word_embeddings: " + on + "}\n"
                              "task: {name: arith, scratchpad: " + on + "}\nrl: {mask_truncated: " + on + "}\n"
                              "log: {progress: " + on + "}\n");
    CHECK(c.model->tie_word_embeddings);
    CHECK(c.rl.mask_truncated);
    CHECK(c.log.progress);
    CHECK(c.task.options.get_bool("arith", "scratchpad", false));
  }
  const RunConfig off = parse(kModel + "task: {name: arith, scratchpad: off}\nrl: {mask_truncated: no}\n");
  CHECK_FALSE(off.rl.mask_truncated);
  CHECK_FALSE(off.task.options.get_bool("arith", "scratchpad", true));
}

TEST_CASE("a ~section.key override on the command line sets the key back to its default", "[config]") {
  const std::string yaml = kModel + "train: {steps: 7, out_dir: runs/x}\ngtpo: {alpha2: 0.5}\n";
  CHECK(parse(yaml).train.steps == 7);
  CHECK(parse(yaml, {split_override("~train.steps")}).train.steps == TrainSection{}.steps);
  CHECK(parse(yaml, {split_override("~gtpo.alpha2")}).rl.gtpo.alpha2 == defaults_for("gtpo").gtpo.alpha2);
  // An override before the unset is dropped too; one after it wins.
  CHECK(parse(yaml, {{"train.steps", "9"}, split_override("~train.steps")}).train.steps == TrainSection{}.steps);
  CHECK(parse(yaml, {split_override("~train.steps"), {"train.steps", "9"}}).train.steps == 9);
  // A model key falls back to its derived default.
  const std::string sized = "model: {hidden_size: 48, num_hidden_layers: 1, num_attention_heads: 2, "
                            "max_position_embeddings: 64, intermediate_size: 100}\n";
  CHECK(parse(sized, {split_override("~model.intermediate_size")}).model->intermediate_size == 128);
  CHECK(is_override("~train.steps"));
  CHECK_FALSE(is_override("~train"));
  CHECK_THROWS_WITH(split_override("~train.steps=3"), Contains("takes no value"));
  CHECK_THROWS_WITH(parse(yaml, {split_override("~bogus.steps")}), Contains("unknown section 'bogus'"));
}

TEST_CASE("task.name on the command line drops the file's options of another task, with a note", "[config]") {
  const std::string yaml = kModel + "task: {name: arith, difficulty: 2, ops: \"+-\", scratchpad: false}\n";
  const RunConfig c = parse(yaml, {{"task.name", "chain"}});
  CHECK(c.task.name == "chain");
  CHECK(c.task.options.has("difficulty"));  // chain takes difficulty and ops: kept
  CHECK(c.task.options.has("ops"));
  CHECK_FALSE(c.task.options.has("scratchpad"));
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], Contains("task.name=chain") && Contains("scratchpad (run.yaml:2)"));
  // The same task, or an option given on the command line, is never dropped silently.
  CHECK(parse(yaml, {{"task.name", "arith"}}).notes.empty());
  CHECK_THROWS_WITH(parse(yaml, {{"task.name", "chain"}, {"task.scratchpad", "true"}}),
                    Contains("unknown option 'scratchpad'"));
}

TEST_CASE(
    "settings the algorithm or the loss never reads are named in a note, and a sequence loss takes clip only",
    "[config]") {
  const RunConfig c = parse(kModel + "rl: {algo: dapo}\ngtpo: {alpha2: 0.3}\nkl_cov: {coef: 0.5}\n");
  REQUIRE(c.notes.size() == 1);
  CHECK_THAT(c.notes[0], Contains("no effect with rl.algo dapo and rl.policy_loss clip") &&
                             Contains("gtpo.alpha2 (run.yaml:3)") && Contains("kl_cov.coef (run.yaml:4)"));
  CHECK(parse(kModel + "rl: {algo: gtpo, policy_loss: kl_cov}\ngtpo: {alpha2: 0.3}\nkl_cov: {coef: 0.5}\n")
            .notes.empty());
  CHECK(parse(kModel + "rl: {algo: clip_cov}\nclip_cov: {lb: 0}\n").notes.empty());
  const RunConfig rl_keys = parse(kModel + "rl: {algo: kl_cov, clip_high: 0.3, rollout_correction_cap: 3}\n");
  REQUIRE(rl_keys.notes.size() == 1);
  CHECK_THAT(rl_keys.notes[0],
             Contains("rl.clip_high (run.yaml:2)") && Contains("rl.rollout_correction_cap"));
  CHECK(parse(kModel +
              "rl: {algo: cispo, clip_high: 0.3, rollout_correction: tis, rollout_correction_cap: 3}\n")
            .notes.empty());
  CHECK_THROWS_WITH(parse(kModel + "rl: {algo: gspo, policy_loss: cispo}\n"),
                    Contains("rl.policy_loss cispo is a per-token loss, and gspo's loss is over sequences"));
}

TEST_CASE("wrong types and bad values name section.key, the expected type and the value", "[config]") {
  CHECK_THROWS_WITH(parse(kModel + "train: {steps: ten}\n"),
                    Contains("run.yaml:2: train.steps: expected integer >= 0, got 'ten'"));
  CHECK_THROWS_WITH(parse(kModel + "train: {steps: -1}\n"),
                    Contains("train.steps: expected integer >= 0, got '-1'"));
  CHECK_THROWS_WITH(parse(kModel + "train: {seed: -1}\n"),
                    Contains("train.seed: expected integer >= 0, got '-1'"));
  CHECK_THROWS_WITH(parse(kModel + "sampler: {top_p: 1.5}\n"),
                    Contains("sampler.top_p: expected number in (0, 1], got '1.5'"));
  CHECK_THROWS_WITH(parse(kModel + "sampler: {group_size: 1}\n"),
                    Contains("sampler.group_size: expected integer in [2, 65536], got '1'"));
  CHECK_THROWS_WITH(parse(kModel + "optim: {lr: fast}\n"),
                    Contains("optim.lr: expected number > 0, got 'fast'"));
  CHECK_THROWS_WITH(parse(kModel + "log: {progress: maybe}\n"),
                    Contains("log.progress: expected true or false, got 'maybe'"));
  CHECK_THROWS_WITH(parse(kModel + "train: {steps: [1, 2]}\n"),
                    Contains("train.steps must be a single value, not a list"));
  CHECK_THROWS_WITH(parse(kModel + "train: 5\n"), Contains("section 'train' must be a mapping"));
  CHECK_THROWS_WITH(parse("- a\n- b\n"), Contains("run.yaml: a run config must be a mapping of sections"));
  CHECK_THROWS_WITH(parse(kModel + "rl: {clip_low: wide}\n"),
                    Contains("run.yaml:2: rl.clip_low: expected number in [0, 1], got 'wide'"));
  CHECK_THROWS_WITH(parse(kModel + "rl: {clip_low: 1.5}\n"),
                    Contains("rl.clip_low: expected number in [0, 1], got '1.5'"));
  CHECK_THROWS_WITH(parse(kModel, {{"gtpo.alpha1", "x"}}),
                    Contains("command line: gtpo.alpha1: expected") && Contains("got 'x'"));
}

TEST_CASE("bad enum values list the accepted words", "[config]") {
  CHECK_THROWS_WITH(
      parse(kModel + "optim: {schedule: linear}\n"),
      Contains("optim.schedule: expected one of constant|constant_with_warmup|cosine, got 'linear'"));
  CHECK_THROWS_WITH(parse(kModel + "tokenizer: {kind: bpe}\n"),
                    Contains("tokenizer.kind: expected one of char|byte|file, got 'bpe'"));
  CHECK_THROWS_WITH(parse(kModel + "rl: {algo: ppo}\n"),
                    Contains("rl.algo: unknown algorithm 'ppo'") && Contains("dapo_forking"));
  CHECK_THROWS_WITH(parse(kModel + "gtpo: {adv_norm: both}\n"),
                    Contains("gtpo.adv_norm: expected one of joint|separate, got 'both'"));
}

TEST_CASE("device, matmul_precision and deterministic: values, errors and the GPU-only rule", "[config]") {
  const RunConfig c = parse(kModel + "train: {device: cuda, matmul_precision: bf16, deterministic: false}\n");
  CHECK(c.train.device == gtpo::Device::cuda);
  CHECK(c.train.matmul_precision == gtpo::MatmulPrecision::bf16);
  CHECK_FALSE(c.train.deterministic);
  CHECK(parse(kModel, {{"train.device", "cuda"}, {"train.matmul_precision", "tf32"}}).train.matmul_precision ==
        gtpo::MatmulPrecision::tf32);
  CHECK_THROWS_WITH(parse(kModel + "train: {device: gpu}\n"),
                    Contains("run.yaml:2: train.device: expected one of cpu|cuda, got 'gpu'"));
  CHECK_THROWS_WITH(parse(kModel + "train:\n  device: cuda\n  matmul_precision: fp16\n"),
                    Contains("run.yaml:4: train.matmul_precision: expected one of fp32|tf32|bf16, got 'fp16'"));
  CHECK_THROWS_WITH(parse(kModel + "train: {deterministic: sometimes}\n"),
                    Contains("run.yaml:2: train.deterministic: expected true or false, got 'sometimes'"));
  CHECK_THROWS_WITH(parse(kModel + "train: {matmul_precision: bf16}\n"),
                    Contains("run.yaml: train.matmul_precision bf16 needs train.device cuda"));
  CHECK_THROWS_WITH(parse(kModel, {{"train.matmul_precision", "tf32"}}),
                    Contains("train.matmul_precision tf32 needs train.device cuda"));
  CHECK_NOTHROW(parse(kModel + "train: {deterministic: false}\n"));  // accepted on the CPU, which always is
}

TEST_CASE("YAML syntax errors give the file and line", "[config]") {
  CHECK_THROWS_WITH(parse(kModel + "train:\n  steps: 3\n  seed: [1, 2\n"),
                    Contains("run.yaml:") && Contains("YAML syntax error"));
  CHECK_THROWS_WITH(parse("train: {steps: 3\nlog: {every: 1}\n"),
                    Contains("run.yaml:") && Contains("YAML syntax error"));
  CHECK_THROWS_WITH(parse("train:\n  steps: 3\n bad: 1\n"),
                    Contains("run.yaml:3:") && Contains("YAML syntax error"));
}

TEST_CASE("rules that span keys", "[config]") {
  CHECK_THROWS_WITH(parse(kModel + "task: {train_file: a.jsonl}\n"),
                    Contains("run.yaml: task.train_file and task.test_file go together"));
  CHECK_THROWS_WITH(parse(kModel + "task: {test_file: b.jsonl}\n"), Contains("go together"));
  CHECK_NOTHROW(parse(kModel + "task: {train_file: a.jsonl, test_file: b.jsonl}\n"));
  CHECK_THROWS_WITH(parse(kModel + "task: {name: arith, digits: 3}\n"),
                    Contains("run.yaml: task arith: unknown option 'digits'") &&
                        Contains("valid options: difficulty, ops, scratchpad, test_fraction"));
  CHECK_THROWS_WITH(parse(kModel + "task: {difficulty: 99}\n"),
                    Contains("option 'difficulty'") && Contains("'99'"));
  CHECK_THROWS_WITH(parse(kModel + "task: {name: sudoku}\n"),
                    Contains("unknown task 'sudoku'") && Contains("countdown"));
  CHECK_THROWS_WITH(parse("train: {steps: 3}\n"),
                    Contains("the model section is required unless train.init_from"));
  CHECK_THROWS_WITH(parse(kModel + "tokenizer: {kind: file}\n"), Contains("tokenizer.file is empty"));
  CHECK_THROWS_WITH(parse(kModel + "tokenizer: {file: t.json}\n"), Contains("tokenizer.kind is not file"));
  CHECK_THROWS_WITH(parse(kModel + "optim: {warmup_steps: 3}\n"),
                    Contains("optim.warmup_steps needs optim.schedule"));
  CHECK_THROWS_WITH(parse(kModel + "sft: {schedule: constant}\n"),
                    Contains("sft.warmup_steps needs sft.schedule"));
  CHECK_THROWS_WITH(parse(kModel + "rl: {mini_batch_prompts: 9}\n"),
                    Contains("rl.mini_batch_prompts (9) exceeds train.prompts_per_step (8)"));
}

TEST_CASE("load_run_config reads a file and names it in errors", "[config]") {
  const std::string path = (std::filesystem::temp_directory_path() / "gtpo-test-run-config.yaml").string();
  {
    std::ofstream out(path);
    out << kModel << "train: {steps: 5, bogus: 1}\n";
  }
  CHECK_THROWS_WITH(load_run_config(path), Contains(path + ":2: unknown key 'bogus'"));
  {
    std::ofstream out(path);
    out << kModel << "train: {steps: 5}\n";
  }
  CHECK(load_run_config(path, {{"train.steps", "6"}}).train.steps == 6);
  std::remove(path.c_str());
  CHECK_THROWS_WITH(load_run_config(path), Contains(path));
}

TEST_CASE("the resolved config reads back to the same config", "[config]") {
  const RunConfig c = parse(R"(
model: {architecture: gpt2, vocab_size: 40, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 4,
        max_position_embeddings: 64}
tokenizer: {alphabet: "0123456789+-*=# \n:\"\\'"}
task: {name: countdown, difficulty: 2, test_fraction: 0.2}
sampler: {group_size: 4, max_new_tokens: 40}
rl: {algo: dapo_forking, dual_clip: 3.5, overlong_buffer: 7, kl_coef: 0.01}
gtpo: {scope: batch}
optim: {lr: 0.0003, schedule: cosine, warmup_steps: 3}
train: {out_dir: "runs/with space: and #hash", seed: 42}
)");
  const std::string yaml = resolved_config_yaml(c);
  INFO(yaml);
  const RunConfig back = parse_run_config(yaml, "resolved.yaml", {});
  CHECK(resolved_config_yaml(back) == yaml);
  CHECK(back.tokenizer.alphabet == "0123456789+-*=# \n:\"\\'");
  CHECK(back.train.out_dir == "runs/with space: and #hash");
  CHECK(back.rl.algo == "dapo_forking");
  CHECK(back.rl.dual_clip == 3.5);
  CHECK(back.rl.overlong_buffer == 7);
  CHECK(back.rl.gtpo.scope == Scope::Batch);
  CHECK(back.task.options.values() == c.task.options.values());
  REQUIRE(back.model);
  CHECK(model_config_to_yaml(*back.model) == model_config_to_yaml(*c.model));
  // Every key appears.
  for (const ConfigKeyDoc& d : config_reference()) {
    const auto dot = d.key.find('.');
    const std::string name = d.key.substr(dot + 1);
    // Keys of other architectures, and those written only when set (so checkpoints of models without them
    // keep their config.yaml): this model is a gpt2.
    if (d.key == "model.rms_norm_eps" || d.key == "model.rope_theta" || d.key == "model.attention_bias" ||
        d.key == "model.mlp_bias" || d.key == "model.head_dim" || d.key.rfind("model.rope_scaling_", 0) == 0)
      continue;
    INFO(d.key);
    if (name.find("[].") != std::string::npos)  // a list's item rows: the list is there (here: empty)
      CHECK(yaml.find("  " + name.substr(0, name.find("[].")) + ": []\n") != std::string::npos);
    else
      CHECK(yaml.find("  " + name + ": ") != std::string::npos);
  }

  // No model section, vocab left to the tokenizer: both survive the round trip.
  const RunConfig init = parse("train: {init_from: runs/sft}\n");
  CHECK_FALSE(parse_run_config(resolved_config_yaml(init), "r.yaml", {}).model);
  const RunConfig vocab = parse(kModel);
  const std::string vy = resolved_config_yaml(vocab);
  CHECK(vy.find("vocab_size") == std::string::npos);
  CHECK(parse_run_config(vy, "r.yaml", {}).model->vocab_size == 0);
}

TEST_CASE("every key is documented", "[config]") {
  const std::vector<ConfigKeyDoc> docs = config_reference();
  for (const ConfigKeyDoc& d : docs) {
    INFO(d.key);
    CHECK_FALSE(d.type.empty());
    CHECK_FALSE(d.default_value.empty());
    CHECK_FALSE(d.meaning.empty());
  }
  // Every RL option rl_config knows is a config key (the RL table cannot grow without the docs).
  for (const RlKey& row : rl_keys()) {
    const std::string key = row.dotted();
    INFO(key);
    CHECK(std::count_if(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.key == key; }) == 1);
  }
  // The documented model keys are the ones parse_model_config accepts: its error lists them all.
  try {
    parse("model: {bogus: 1}\n");
    FAIL("an unknown model key must be an error");
  } catch (const gtpo::Error& e) {
    const std::string message = e.what();
    for (const ConfigKeyDoc& d : docs)
      if (d.key.rfind("model.", 0) == 0) {
        INFO(d.key);
        CHECK(message.find(d.key.substr(6)) != std::string::npos);
      }
  }
  // Defaults shown are the gtpo defaults, with a note on keys that differ per algorithm.
  const auto find = [&](const std::string& key) {
    return *std::find_if(docs.begin(), docs.end(), [&](const ConfigKeyDoc& d) { return d.key == key; });
  };
  CHECK(find("rl.algo").default_value == "gtpo");
  CHECK(find("rl.clip_high").default_value == "0.28");
  CHECK_THAT(find("rl.overlong").meaning, Contains("depends on rl.algo"));
  CHECK_THAT(find("rl.eps").meaning, !Contains("depends on rl.algo"));
  CHECK(find("train.out_dir").default_value == "runs/default");
  CHECK(find("train.init_from").default_value == "\"\"");
  const std::string md = config_reference_markdown();
  CHECK_THAT(md, Contains("## Per-algorithm RL defaults"));
  CHECK_THAT(md,
             Contains("| `rl.overlong` | `none` | `none` | `dapo_soft` | `dapo_soft` | `grop` | `grop` |"));
}

TEST_CASE("docs/configuration.md is the generated reference", "[config]") {
  const std::string path = std::string(GTPO_SOURCE_DIR) + "/docs/configuration.md";
  INFO("regenerate with: ./build/tests/test_rl \"[regenerate-config-doc]\"");
  CHECK(read_text(path) == config_reference_markdown());
}

// Hidden (not run by default): writes docs/configuration.md from the code.
TEST_CASE("regenerate docs/configuration.md", "[.][regenerate-config-doc]") {
  const std::string path = std::string(GTPO_SOURCE_DIR) + "/docs/configuration.md";
  std::ofstream(path, std::ios::binary) << config_reference_markdown();
  SUCCEED("wrote " << path);
}

TEST_CASE("run config: gtpo and grpo_s say at start-up that reward values enter only through correctness",
          "[config][reward]") {
  const std::string yaml =
      "model: {architecture: llama, hidden_size: 32, num_hidden_layers: 1, "
      "num_attention_heads: 4, max_position_embeddings: 64}\n"
      "reward:\n  functions:\n    - {name: correct}\n    - {name: length, weight: 0.1}\n";
  for (const char* algo : {"gtpo", "grpo_s"}) {
    const std::string note = reward_value_note(parse(yaml, {{"rl.algo", algo}}));
    INFO(algo);
    CHECK_THAT(note,
               Catch::Contains(std::string("rl.algo ") + algo + " shapes rewards from correctness alone") &&
                   Catch::Contains("reward.functions length enter only through the correctness") &&
                   Catch::Contains("reward.correct_threshold 0.5"));
  }
  for (const char* algo : {"grpo", "dr_grpo", "dapo", "dapo_forking"})  // they use r_i itself
    CHECK(reward_value_note(parse(yaml, {{"rl.algo", algo}})).empty());
  CHECK(reward_value_note(parse(yaml, {{"rl.algo", "gtpo"}, {"~reward.functions", ""}})).empty());
  // The verifier alone is correctness itself.
  CHECK(reward_value_note(parse("model: {architecture: llama, hidden_size: 32, num_hidden_layers: 1, "
                                "num_attention_heads: 4, max_position_embeddings: 64}\n"
                                "reward:\n  functions:\n    - {name: correct, weight: 2}\n"))
            .empty());
}
