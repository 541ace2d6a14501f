// gtpo sample: grouped sampling from a checkpoint, as text or JSONL with per-token diagnostics.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/device_setup.h"
#include "model/checkpoint.h"
#include "model/sampler.h"
#include "runtime/error.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    {"--checkpoint", true, "checkpoint directory (required)"},
    {"--prompt", true, "prompt text (encoded with the checkpoint's tokenizer)"},
    {"--prompt-tokens", true, "prompt as comma-separated token ids, instead of --prompt"},
    {"-n", true, "samples per prompt, G (default 1)"},
    {"--temperature", true, "sampling temperature; 0 = greedy (default 1)"},
    {"--top-k", true, "keep the k most probable tokens; 0 = off (default 0)"},
    {"--top-p", true, "nucleus sampling mass; 1 = off (default 1)"},
    {"--seed", true, "random seed (default 0)"},
    {"--max-new-tokens", true, "tokens to generate at most (default 64)"},
    {"--stop", true, "stop string (ends a sample once its text ends with it)"},
    {"--jsonl", false, "print one JSON object per sample with tokens, logprobs and entropies"},
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
}  // namespace

int run_sample(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.help()) {
    std::fputs(usage_text("gtpo sample --checkpoint DIR (--prompt TEXT | --prompt-tokens 1,2,3) [-n G] [options]",
                          "Samples G continuations of one prompt with a KV cache. Every token comes with its\n"
                          "log-prob and the full-vocabulary entropy of its (temperature-scaled) distribution.",
                          kFlags).c_str(), stdout);
    return 0;
  }
  const Device device = device_from(args);
  prepare_device(device);
  model::LoadedModel loaded = model::load_model(args.require("--checkpoint"), device);
  const data::Tokenizer* tok = loaded.tokenizer.get();
  model::PromptInput prompt;
  GTPO_CHECK(args.has("--prompt") != args.has("--prompt-tokens"), "sample: give exactly one of --prompt and --prompt-tokens");
  if (args.has("--prompt")) {
    GTPO_CHECK(tok, "sample: this checkpoint has no tokenizer; use --prompt-tokens");
    prompt.tokens = tok->encode(args.get("--prompt", ""));
  } else {
    prompt.tokens = parse_ids(args.get("--prompt-tokens", ""));
  }
  model::SamplingOptions o;
  o.group_size = args.get_int("-n", 1);
  o.temperature = static_cast<float>(args.get_double("--temperature", 1.0));
  o.top_k = args.get_int("--top-k", 0);
  o.top_p = static_cast<float>(args.get_double("--top-p", 1.0));
  o.seed = static_cast<uint64_t>(args.get_int("--seed", 0));
  o.max_new_tokens = args.get_int("--max-new-tokens", 64);
  if (tok) {
    o.eos_id = tok->eos_id();
    o.pad_id = tok->pad_id() >= 0 ? tok->pad_id() : 0;
    o.decode = [tok](const std::vector<int32_t>& ids) { return tok->decode(ids); };
  }
  if (args.has("--stop")) o.stop_strings.push_back(args.get("--stop", ""));
  model::SamplerStats stats;
  std::vector<model::Sample> samples = model::sample_groups(*loaded.model, {prompt}, o, &stats);
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
