#include "rl/run_config_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <type_traits>

#include "rl/algorithm_registry.h"
#include "runtime/error.h"

namespace gtpo::rl {

RlConfig default_rl_config() {
  RlConfig cfg = defaults_for(kDefaultAlgo);
  cfg.max_new_tokens = static_cast<int>(SamplerSection{}.max_new_tokens);
  return cfg;
}

namespace schema {
namespace {

// How one field type reads from and prints to text. parse throws "expected TYPE, got 'VALUE'".
template <typename T>
struct Codec {
  std::string type;
  std::function<T(const std::string&)> parse;
  std::function<std::string(const T&)> print;
  bool quoted = false;
};

[[noreturn]] void expected(const std::string& type, const std::string& value) {
  fail("expected ", type, ", got '", value, "'");
}

// Shortest text that reads back as the same double: "0.001", not "0.0010000000000000000208".
std::string format_double(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

template <typename T>
Codec<T> integer_at_least(T lo) {
  const std::string type = "integer >= " + std::to_string(lo);
  return {type,
          [=](const std::string& v) {
            T x{};
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x < lo) expected(type, v);
            return x;
          },
          [](const T& x) { return std::to_string(x); }};
}

// A finite number in a range; an infinite bound is left out of the type text.
Codec<double> number(double lo, double hi, bool lo_open = false, bool hi_open = false) {
  const double inf = std::numeric_limits<double>::infinity();
  std::string type = "number";
  if (lo > -inf && hi < inf) {
    type += std::string(" in ") + (lo_open ? "(" : "[") + format_double(lo) + ", " + format_double(hi) +
            (hi_open ? ")" : "]");
  } else if (lo > -inf) {
    type += std::string(lo_open ? " > " : " >= ") + format_double(lo);
  }
  return {type,
          [=](const std::string& v) {
            double x = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            const bool ok = !v.empty() && ec == std::errc() && end == v.data() + v.size() &&
                            std::isfinite(x) && (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
            if (!ok) expected(type, v);
            return x;
          },
          [](const double& x) { return format_double(x); }};
}

// The same spellings rl_config accepts, so every boolean of a config reads alike.
Codec<bool> boolean() {
  return {"bool",
          [](const std::string& v) {
            if (v == "true" || v == "on" || v == "yes" || v == "1") return true;
            if (v == "false" || v == "off" || v == "no" || v == "0") return false;
            expected("true or false", v);
          },
          [](const bool& x) { return std::string(x ? "true" : "false"); }};
}

Codec<std::string> text() {
  return {"string", [](const std::string& v) { return v; }, [](const std::string& x) { return x; }, true};
}

template <typename E>
Codec<E> choice(std::vector<std::pair<std::string, E>> choices) {
  std::vector<std::string> words;
  for (const auto& c : choices) words.push_back(c.first);
  const std::string type = join(words, "|");
  return {type,
          [=](const std::string& v) {
            for (const auto& [w, e] : choices)
              if (v == w) return e;
            fail("expected one of ", type, ", got '", v, "'");
          },
          [=](const E& x) {
            for (const auto& [w, e] : choices)
              if (x == e) return w;
            return std::string("?");
          }};
}

Codec<optim::LrScheduleKind> schedule() {
  std::vector<std::pair<std::string, optim::LrScheduleKind>> kinds;
  for (auto k : {optim::LrScheduleKind::constant, optim::LrScheduleKind::constant_with_warmup,
                 optim::LrScheduleKind::cosine})
    kinds.emplace_back(optim::lr_schedule_kind_name(k), k);
  return choice(kinds);
}

template <typename S, typename T>
Key field(const char* section, const char* name, S RunConfig::*sec, T S::*member,
          const std::type_identity_t<Codec<T>>& codec, const char* meaning) {
  return {section,
          name,
          codec.type,
          meaning,
          [=](RunConfig& c, const std::string& v) { (c.*sec).*member = codec.parse(v); },
          [=](const RunConfig& c) { return codec.print((c.*sec).*member); },
          codec.quoted};
}

// One row per plain field: FIELD(train, steps, integer_at_least<int64_t>(0), "meaning").
#define FIELD(sec, name, codec, meaning) \
  field(#sec, #name, &RunConfig::sec, &std::remove_cvref_t<decltype(RunConfig::sec)>::name, codec, meaning)

// Type and meaning of each RL key; the keys themselves (and how they parse) belong to rl_config.
struct RlDoc {
  const char* type;
  const char* meaning;
};
const std::map<std::string, RlDoc>& rl_docs() {
  static const std::map<std::string, RlDoc> docs = {
      {"rl.eps", {"number in (0, 1]", "ε added in every division of the advantage math (std, 1/H)"}},
      {"rl.clip_low", {"number in [0, 1)", "ε_low: the importance ratio is clipped below at 1 − clip_low"}},
      {"rl.clip_high", {"number >= 0", "ε_high: the importance ratio is clipped above at 1 + clip_high"}},
      {"rl.dual_clip", {"off|on|number > 1", "dual clip c for negative advantages (on = 3.0)"}},
      {"rl.loss_agg",
       {"token-mean|seq-mean-token-mean|seq-mean-token-sum|seq-mean-token-sum-norm",
        "how per-token losses are averaged over the mini-batch"}},
      {"rl.dynamic_sampling",
       {"bool", "drop groups whose responses are all correct or all wrong and sample more prompts"}},
      {"rl.max_resample_rounds",
       {"integer >= 0", "extra sampling rounds dynamic sampling may take per step"}},
      {"rl.overlong", {"none|dapo_soft|grop", "length penalty: DAPO's soft overlong punishment or GRoP"}},
      {"rl.overlong_buffer",
       {"auto|integer >= 0", "L_cache of dapo_soft in tokens; auto = 20% of sampler.max_new_tokens"}},
      {"rl.mask_truncated", {"bool", "leave truncated responses out of the loss"}},
      {"rl.kl_coef", {"number >= 0", "weight of the KL to a frozen reference model; 0 = no reference model"}},
      {"rl.kl_estimator", {"k1|k2|k3", "KL estimator (k3 = e^−x − 1 + x, x = log π_θ − log π_ref)"}},
      {"rl.entropy_coef", {"number", "entropy bonus: −entropy_coef · mean entropy is added to the loss"}},
      {"rl.ppo_epochs", {"integer >= 1", "passes of clipped updates over each rollout batch"}},
      {"rl.mini_batch_prompts",
       {"integer >= 0", "prompts per optimiser step within a pass; 0 = every prompt of the step"}},
      {"dapo_forking.rho",
       {"number in (0, 1]", "dapo_forking: fraction of highest-entropy tokens kept in the loss"}},
      {"gtpo.alpha1", {"number >= 0", "gtpo: α1, the outcome part of the shaped token reward"}},
      {"gtpo.alpha2", {"number >= 0", "gtpo: α2, the entropy-weighted part of the shaped token reward"}},
      {"gtpo.adv_norm",
       {"joint|separate", "gtpo: z-score all shaped rewards together (joint) or O+ and O− apart (separate)"}},
      {"gtpo.scope",
       {"group|batch", "gtpo: shaping and advantage statistics per prompt group or over the batch"}},
      {"gtpo.weights", {"arith|geo", "gtpo: entropy weights relative to the arithmetic or geometric mean"}},
      {"grpo_s.beta1", {"number >= 0", "grpo_s: β1, the outcome part of the shaped sequence reward"}},
      {"grpo_s.beta2",
       {"number >= 0", "grpo_s: β2, the entropy-weighted part of the shaped sequence reward"}},
      {"grpo_s.weights",
       {"arith|geo", "grpo_s: entropy weights relative to the arithmetic or geometric mean"}},
      {"grpo_s.ratio",
       {"arith|geo", "grpo_s: sequence importance ratio as the arithmetic or geometric mean"}},
  };
  return docs;
}

// rl_config's messages start "option KEY: "; our callers name the key themselves.
std::string strip_option_prefix(const std::string& message, const std::string& key) {
  const std::string prefix = "option " + key + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

Key rl_key(const std::string& dotted) {
  const auto dot = dotted.find('.');
  const auto doc = rl_docs().find(dotted);
  const RlDoc d = doc == rl_docs().end() ? RlDoc{"", ""} : doc->second;
  return {dotted.substr(0, dot),
          dotted.substr(dot + 1),
          d.type,
          d.meaning,
          [dotted](RunConfig& c, const std::string& v) {
            try {
              set_rl_option(c.rl, dotted, v);
            } catch (const Error& e) {
              throw Error(strip_option_prefix(e.what(), dotted));
            }
          },
          [dotted](const RunConfig& c) {
            for (const auto& [k, v] : rl_option_values(c.rl))
              if (k == dotted) return v;
            return std::string("?");
          }};
}

std::vector<Key> build() {
  const auto tokenizer_kinds = choice<TokenizerKind>(
      {{"char", TokenizerKind::Char}, {"byte", TokenizerKind::Byte}, {"file", TokenizerKind::File}});
  const auto i64 = [](int64_t lo) { return integer_at_least<int64_t>(lo); };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Key> k = {
      FIELD(tokenizer, kind, tokenizer_kinds,
            "char: one token per character; byte: 256 bytes plus <pad>, <bos>, <eos>; file: tokenizer.file"),
      FIELD(tokenizer, alphabet, text(), "characters of the char tokenizer; empty = the task's alphabet"),
      FIELD(tokenizer, file, text(), "path of a tokenizer.json (kind file)"),

      FIELD(task, name, text(), "problem generator: arith, chain or countdown (its options follow below)"),
      FIELD(task, train_file, text(), "JSONL training problems instead of the generator (needs test_file)"),
      FIELD(task, test_file, text(), "JSONL test problems (needs train_file)"),

      FIELD(sampler, group_size, i64(2), "G: responses sampled per prompt"),
      FIELD(sampler, temperature, number(0, inf), "sampling temperature; 0 = greedy"),
      FIELD(sampler, top_k, i64(0), "sample among the k most likely tokens; 0 = off"),
      FIELD(sampler, top_p, number(0, 1, true), "nucleus sampling mass; 1 = off"),
      // Also the RL contract's L_max (overlong penalties), so it writes both places.
      {"sampler", "max_new_tokens", "integer >= 1",
       "L_max: response length limit in tokens (a truncated response is incorrect)",
       [](RunConfig& c, const std::string& v) {
         const int64_t x = integer_at_least<int64_t>(1).parse(v);
         if (x > std::numeric_limits<int>::max()) expected("integer >= 1", v);
         c.sampler.max_new_tokens = x;
         c.rl.max_new_tokens = static_cast<int>(x);
       },
       [](const RunConfig& c) { return std::to_string(c.sampler.max_new_tokens); }},

      // Resets every RL key to the algorithm's defaults, so parse_run_config applies it before the others.
      {"rl", "algo", join(algorithm_names(), "|"),
       "the algorithm; its defaults apply before the other RL keys",
       [](RunConfig& c, const std::string& v) {
         c.rl = defaults_for(v);
         c.rl.max_new_tokens = static_cast<int>(c.sampler.max_new_tokens);
       },
       [](const RunConfig& c) { return c.rl.algo; }},
  };
  for (const std::string& key : rl_option_keys())
    if (key != "sampler.max_new_tokens") k.push_back(rl_key(key));

  const std::vector<Key> rest = {
      FIELD(optim, lr, number(0, inf, true), "peak learning rate of the RL updates (AdamW)"),
      FIELD(optim, beta1, number(0, 1, false, true), "AdamW β1"),
      FIELD(optim, beta2, number(0, 1, false, true), "AdamW β2"),
      FIELD(optim, eps, number(0, inf, true), "AdamW ε"),
      FIELD(optim, weight_decay, number(0, inf), "decoupled weight decay"),
      FIELD(optim, grad_clip, number(0, inf), "clip the global gradient norm to this; 0 = off"),
      FIELD(optim, schedule, schedule(), "learning-rate schedule over train.steps"),
      FIELD(optim, warmup_steps, i64(0), "linear warm-up steps (not with schedule constant)"),
      FIELD(optim, min_lr_ratio, number(0, 1), "cosine: final learning rate as a fraction of lr"),

      FIELD(sft, steps, i64(0), "supervised warm-up steps on reference solutions; 0 = no SFT"),
      FIELD(sft, batch_size, i64(1), "problems per SFT step"),
      FIELD(sft, lr, number(0, inf, true), "peak SFT learning rate"),
      FIELD(sft, schedule, schedule(), "SFT learning-rate schedule over sft.steps"),
      FIELD(sft, warmup_steps, i64(0), "SFT linear warm-up steps (not with schedule constant)"),
      FIELD(sft, weight_decay, number(0, inf), "SFT decoupled weight decay"),
      FIELD(sft, eval_every, i64(0), "greedy test accuracy every this many SFT steps, logged in sft.jsonl; 0 = only at the end"),

      FIELD(train, steps, i64(0), "RL steps"),
      FIELD(train, prompts_per_step, i64(1), "prompts per RL step (each gets sampler.group_size responses)"),
      FIELD(train, seed, integer_at_least<uint64_t>(0), "seed of initialisation, data order and sampling"),
      FIELD(train, out_dir, text(), "run directory: config, metrics.jsonl, samples, checkpoints"),
      FIELD(train, init_from, text(),
            "checkpoint directory to start from; empty = a new model from the model section and train.seed"),
      FIELD(train, checkpoint_every, i64(0), "checkpoint every this many steps; 0 = only at the end"),
      FIELD(train, sample_every, i64(0), "log sampled completions every this many steps; 0 = never"),
      FIELD(train, threads, i64(0), "CPU threads; 0 = the library default"),
      FIELD(train, device, choice<Device>({{"cpu", Device::cpu}, {"cuda", Device::cuda}}),
            "where the model lives and every op runs (cuda needs a GPU build and a visible GPU; docs/cuda.md)"),
      FIELD(train, matmul_precision,
            choice<MatmulPrecision>({{"fp32", MatmulPrecision::fp32},
                                     {"tf32", MatmulPrecision::tf32},
                                     {"bf16", MatmulPrecision::bf16}}),
            "GEMM (and GPU attention) inputs: fp32 exact; tf32 and bf16 round inputs for speed (device cuda only)"),
      FIELD(train, deterministic, boolean(),
            "cuda: bitwise-repeatable kernels and cuBLAS at some speed cost; the CPU is always deterministic"),

      FIELD(eval, every, i64(0), "evaluate every this many RL steps; 0 = only at the start and the end"),
      FIELD(eval, num_problems, i64(1), "test problems per evaluation"),
      FIELD(eval, k, i64(1), "samples per problem: pass@k and mean@k for k = 1, 2, 4, ... up to eval.k"),
      FIELD(eval, temperature, number(0, inf),
            "temperature of the k samples (greedy accuracy is also reported)"),
      FIELD(eval, max_new_tokens, i64(0), "response length limit in evaluation; 0 = sampler.max_new_tokens"),

      FIELD(log, every, i64(1), "print a progress line every this many RL steps (metrics.jsonl always has every step)"),
      FIELD(log, progress, boolean(), "show a progress line during long phases"),
      FIELD(log, samples, i64(0), "completions logged at each train.sample_every step"),
  };
  k.insert(k.end(), rest.begin(), rest.end());
  return k;
}

}  // namespace

const std::vector<Key>& keys() {
  static const std::vector<Key> all = build();
  return all;
}

const Key* find(const std::string& section, const std::string& name) {
  for (const Key& k : keys())
    if (k.section == section && k.name == name) return &k;
  return nullptr;
}

const std::vector<std::string>& sections() {
  static const std::vector<std::string> all = [] {
    std::vector<std::string> s = {"model"};
    for (const Key& k : keys())
      if (s.back() != k.section && std::find(s.begin(), s.end(), k.section) == s.end())
        s.push_back(k.section);
    return s;
  }();
  return all;
}

bool is_section(const std::string& name) {
  return std::find(sections().begin(), sections().end(), name) != sections().end();
}

std::string key_list(const std::string& section) {
  std::vector<std::string> names;
  for (const Key& k : keys())
    if (k.section == section) names.push_back(k.name);
  return join(names);
}

bool is_task_own_key(const std::string& name) { return find("task", name) != nullptr; }

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

std::string yaml_quote(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char ch : text) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (ch < 0x20 || ch == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);  // UTF-8 bytes pass through unchanged
        }
    }
  }
  return out + "\"";
}

}  // namespace schema
}  // namespace gtpo::rl
