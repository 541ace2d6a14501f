// gtpo sample: grouped sampling from a checkpoint, as text or JSONL with per-token diagnostics.
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/args.h"
#include "apps/checkpoint_input.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "data/prompt_tokens.h"
#include "model/checkpoint.h"
#include "model/memory_estimate.h"
#include "model/sampler.h"
#include "rl/prompt_template.h"
#include "rl/rollout_phase.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
// TEXT through PROMPT_TEMPLATE (chosen_prompt_template: by default the run's, else the directory's chat
// template) when that changes plain prompts, else, for a run on a task generator, with the trailing newline
// its prompts end with (a dataset's plain prompts are used as they are, so nothing is added for them).
std::vector<int32_t> formatted_prompt_tokens(const data::Tokenizer& tok,
                                             const std::optional<rl::RunConfig>& run,
                                             const std::string& prompt_template, const std::string& dir,
                                             const std::string& text) {
  const data::chat::PromptFormat format = rl::prompt_format(prompt_template, dir);
  data::Problem p;
  p.prompt = text;
  if (format.transforms_plain()) {  // chosen_prompt_template said which
    p.prompt = format.plain(text);
    p.rendered = true;
  } else if (run && run->task.train_file.empty() && (text.empty() || text.back() != '\n')) {
    p.prompt += '\n';
    std::fprintf(stderr,
                 "sample: the prompt gets the trailing newline of task %s's prompts, as in training (--raw: "
                 "as given)\n",
                 run->task.name.c_str());
  }
  return data::encode_prompt(tok, p);
}

const std::vector<FlagSpec> kFlags = {
    checkpoint_flag(),
    {"--prompt", true,
     "prompt text, formatted as the run formatted its prompts (see --raw) and encoded with the "
     "checkpoint's tokenizer"},
    {"--raw", false, "encode --prompt exactly as given, without any prompt format"},
    chat_template_flag(),
    {"--prompt-tokens", true, "prompt as comma-separated token ids, instead of --prompt"},
    {"-n", true, "samples per prompt, G (default 1)"},
    {"--temperature", true,
     "sampling temperature; 0 = greedy (default: the run's sampler.temperature, else 1)"},
    {"--top-k", true, "keep the k most probable tokens; 0 = off (default: the run's sampler.top_k, else 0)"},
    {"--top-p", true, "nucleus sampling mass; 1 = off (default: the run's sampler.top_p, else 1)"},
    {"--seed", true, "random seed, >= 0 (default 0)"},
    {"--max-new-tokens", true,
     "tokens to generate at most (default: the run's sampler.max_new_tokens, else the config default, 48)"},
    {"--stop", true, "stop string (ends a sample once its text ends with it)"},
    {"--jsonl", false, "print one JSON object per sample with tokens, logprobs and entropies"},
    threads_flag(),
    device_flag("cpu")};

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      GTPO_CHECK(used == item.size(), "");
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      fail("sample: --prompt-tokens expects comma-separated integers, got '", item, "'");
    }
  }
  return ids;
}

// --prompt (formatted as the run's prompts unless --raw) or --prompt-tokens, as ids.
model::PromptInput prompt_input(const Args& args, const CheckpointInput& in) {
  const data::Tokenizer* tok = in.loaded.tokenizer.get();
  const int64_t vocab_size = in.loaded.model->config().vocab_size;
  model::PromptInput prompt;
  GTPO_CHECK(args.has("--prompt") != args.has("--prompt-tokens"),
             "sample: give exactly one of --prompt and --prompt-tokens");
  if (args.has("--prompt")) {
    GTPO_CHECK(tok, "sample: this checkpoint has no tokenizer; use --prompt-tokens");
    const std::string text = args.get("--prompt", "");
    GTPO_CHECK(!(args.has("--raw") && args.has("--chat-template")),
               "sample: --raw encodes the prompt as given; give it or --chat-template, not both");
    prompt.tokens = args.has("--raw")
                        ? tok->encode(text)
                        : formatted_prompt_tokens(*tok, in.run_config,
                                                  chosen_prompt_template(args, in, "sample"), in.dir, text);
  } else {
    prompt.tokens = parse_ids(args.get("--prompt-tokens", ""));
    for (int32_t id : prompt.tokens)
      GTPO_CHECK(id >= 0 && id < vocab_size, "sample: --prompt-tokens: token id ", id, " outside [0, ",
                 vocab_size, ") (model.vocab_size)");
  }
  return prompt;
}
}  // namespace

int run_sample(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo sample --checkpoint DIR|RUN_DIR (--prompt TEXT | --prompt-tokens 1,2,3) [-n G] [options]",
          "Samples G continuations of one prompt with a KV cache. Every token comes with its\n"
          "log-prob and the full-vocabulary entropy of its (temperature-scaled) distribution. A training\n"
          "checkpoint's run config gives the sampling defaults (its sampler section) and the prompt\n"
          "format the run trained with: its prompt.template, else the trailing newline a task generator's\n"
          "prompts end with. A directory without a run config (a Hugging Face save, an export) renders\n"
          "the prompt through its chat template as one user turn, as transformers' pipeline does.\n"
          "--chat-template chooses another format; --raw encodes the text as given."))
    return 0;
  args.reject_unused("sample", false, false);
  CheckpointInput in = load_checkpoint_input(args, "sample");
  model::LoadedModel& loaded = in.loaded;
  const rl::SamplerSection run_sampler = in.run_config ? in.run_config->sampler : rl::SamplerSection{};
  const data::Tokenizer* tok = loaded.tokenizer.get();
  const model::PromptInput prompt = prompt_input(args, in);
  const model::ModelConfig& mc = loaded.model->config();
  const int64_t context = mc.max_position_embeddings;
  const int64_t prompt_len = static_cast<int64_t>(prompt.tokens.size());
  GTPO_CHECK(prompt_len >= 1 && prompt_len < context, "sample: the prompt has ", prompt_len,
             " tokens; it must have between 1 and ", context - 1, " (model.max_position_embeddings ", context, ")");
  model::SamplingOptions o;
  o.group_size = args.get_int("-n", 1, 1, 1 << 16);
  o.temperature = static_cast<float>(args.get_double("--temperature", run_sampler.temperature));
  GTPO_CHECK(o.temperature >= 0.0f, "sample: --temperature must be >= 0, got ", o.temperature);
  o.top_k = args.get_int("--top-k", run_sampler.top_k, 0, mc.vocab_size);
  o.top_p = static_cast<float>(args.get_double("--top-p", run_sampler.top_p));
  GTPO_CHECK(o.top_p > 0.0f && o.top_p <= 1.0f, "sample: --top-p must be in (0, 1], got ", o.top_p);
  o.seed = static_cast<uint64_t>(args.get_int("--seed", 0, 0, std::numeric_limits<int64_t>::max()));
  o.max_new_tokens = args.get_int("--max-new-tokens", run_sampler.max_new_tokens, 1, context - prompt_len);
  // Before allocating: -n samples of this length must fit in memory.
  const double need = model::generation_bytes(mc, o.group_size, prompt_len + o.max_new_tokens);
  const double have = model::physical_memory_bytes();
  GTPO_CHECK(have == 0.0 || need < have, "sample: -n ", o.group_size, " samples of ", prompt_len + o.max_new_tokens,
             " tokens need about ", need / (1 << 30), " GiB of keys, values and logits, more than this machine's ",
             have / (1 << 30), " GiB: lower -n or --max-new-tokens");
  if (tok) rl::attach_tokenizer(o, *tok);
  if (args.has("--stop")) o.stop_strings.push_back(args.get("--stop", ""));
  model::SamplerStats stats;
  std::vector<model::Sample> samples = model::sample_groups(*loaded.model, {prompt}, model::with_model_eos(o, *loaded.model), &stats);
  for (const model::Sample& s : samples) {
    std::string text = tok ? tok->decode(s.tokens) : "";
    if (args.has("--jsonl")) {
      nlohmann::json j = {{"prompt_tokens", s.prompt_tokens}, {"tokens", s.tokens},   {"logprobs", s.logprobs},
                          {"entropies", s.entropies},         {"text", text},         {"finish", model::finish_reason_name(s.finish)}};
      std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      double mean_entropy = 0.0;
      for (float e : s.entropies) mean_entropy += e;
      mean_entropy /= std::max<size_t>(1, s.entropies.size());
      std::printf("--- sample %lld (%s, %zu tokens, mean entropy %.3f)\n%s\n", static_cast<long long>(s.sample_index),
                  model::finish_reason_name(s.finish), s.tokens.size(), mean_entropy, tok ? text.c_str() : "");
    }
  }
  std::fprintf(stderr, "generated %lld tokens in %.2fs (%.1f tok/s decode)\n",
               static_cast<long long>(stats.generated_tokens), stats.prefill_seconds + stats.decode_seconds,
               stats.decode_seconds > 0 ? stats.generated_tokens / stats.decode_seconds : 0.0);
  return 0;
}

}  // namespace gtpo::apps
