#include "model/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

#include "runtime/autograd.h"
#include "runtime/backend.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/random.h"

namespace gtpo::model {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::eos: return "eos";
    case FinishReason::stop: return "stop";
    case FinishReason::length: return "length";
  }
  return "?";
}

namespace {

bool ends_with_stop(const std::string& text, const std::vector<std::string>& stops) {
  for (const std::string& s : stops)
    if (!s.empty() && text.size() >= s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) return true;
  return false;
}

void validate(const Transformer& model, const std::vector<PromptInput>& prompts, const SamplingOptions& o) {
  GTPO_CHECK(!prompts.empty(), "sample: no prompts");
  GTPO_CHECK(o.group_size >= 1, "sample: group size (-n) must be at least 1, got ", o.group_size);
  GTPO_CHECK(o.max_new_tokens >= 1, "sample: max_new_tokens must be at least 1, got ", o.max_new_tokens);
  GTPO_CHECK(o.temperature >= 0.0f && std::isfinite(o.temperature), "sample: temperature must be >= 0, got ",
             o.temperature);
  GTPO_CHECK(o.top_p > 0.0f && o.top_p <= 1.0f, "sample: top_p must be in (0, 1], got ", o.top_p);
  GTPO_CHECK(o.top_k >= 0, "sample: top_k must be >= 0, got ", o.top_k);
  GTPO_CHECK(o.stop_strings.empty() || o.decode, "sample: stop strings need a tokenizer to decode text");
  const ModelConfig& c = model.config();
  GTPO_CHECK(o.sampleable_ids >= 0 && o.sampleable_ids <= c.vocab_size, "sample: the sampleable ids [0, ",
             o.sampleable_ids, ") (the tokenizer's size) must lie within the model's vocabulary of ",
             c.vocab_size);
  for (size_t p = 0; p < prompts.size(); ++p) {
    GTPO_CHECK(!prompts[p].tokens.empty(), "sample: prompt ", p, " is empty");
    for (int32_t t : prompts[p].tokens)
      GTPO_CHECK(t >= 0 && t < c.vocab_size, "sample: prompt ", p, " has token id ", t, " outside [0, ",
                 c.vocab_size, ")");
    const int64_t total = static_cast<int64_t>(prompts[p].tokens.size()) + o.max_new_tokens;
    GTPO_CHECK(total <= c.max_position_embeddings, "sample: prompt ", p, " (", prompts[p].tokens.size(),
               " tokens) + max_new_tokens ", o.max_new_tokens, " exceeds max_position_embeddings ",
               c.max_position_embeddings);
  }
}

}  // namespace

SamplingOptions with_model_eos(SamplingOptions options, const Transformer& model) {
  for (int32_t id : model.eos_token_ids())
    if (id != options.eos_id &&
        std::find(options.extra_eos_ids.begin(), options.extra_eos_ids.end(), id) == options.extra_eos_ids.end())
      options.extra_eos_ids.push_back(id);
  return options;
}

namespace {

// sample_groups' state: R = B·G decode rows over one KV cache, row r the (r % G)-th sample of prompt r / G.
struct Decode {
  Decode(const Transformer& model, const std::vector<PromptInput>& prompts, const SamplingOptions& o)
      : model(model),
        o(o),
        device(model.device()),
        B(static_cast<int64_t>(prompts.size())),
        G(o.group_size),
        R(B * G),
        V(model.config().vocab_size),
        drop_finished(o.drop_finished_rows) {
    for (const PromptInput& p : prompts)
      prompt_len = std::max<int64_t>(prompt_len, static_cast<int64_t>(p.tokens.size()));
    capacity = prompt_len + o.max_new_tokens;
  }
  const Transformer& model;
  const SamplingOptions& o;
  const Device device;
  const int64_t B, G, R, V;
  int64_t prompt_len = 0, capacity = 0;  // the longest prompt; it plus max_new_tokens
  std::vector<int64_t> pad;              // [B] left padding of each prompt
  std::vector<int32_t> mask;             // [R, capacity] the cache slots each row attends to
  KvCache prompt_cache, cache;
  Tensor logits;  // [F, V]: row i is the logits of row fed[i]
  std::vector<Sample> samples;
  std::vector<bool> done;
  std::vector<int32_t> chosen;
  // The rows fed at the last forward, in order; with drop_finished the finished ones leave it, else it stays
  // every row.
  std::vector<int32_t> fed;
  std::vector<int64_t> logits_row;  // row r's row of logits (valid while r is fed)
  const bool drop_finished;
  int64_t generated = 0;
};

// Prefill: prompts left-padded to one length, pads masked out, positions counted from each prompt's first
// real token. The decode cache then holds every row, and each row starts from its prompt's last logits.
void prefill(Decode& d, const std::vector<PromptInput>& prompts) {
  const int64_t B = d.B, G = d.G, P = d.prompt_len;
  std::vector<int32_t> tokens(static_cast<size_t>(B * P), d.o.pad_id), positions(tokens.size(), 0);
  d.mask.assign(static_cast<size_t>(d.R * d.capacity), 0);
  d.pad.resize(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& pt = prompts[static_cast<size_t>(b)].tokens;
    const int64_t pad = d.pad[static_cast<size_t>(b)] = P - static_cast<int64_t>(pt.size());
    for (size_t t = 0; t < pt.size(); ++t) {
      const size_t at = static_cast<size_t>(b * P + pad) + t;
      tokens[at] = pt[t];
      positions[at] = static_cast<int32_t>(t);
      for (int64_t g = 0; g < G; ++g) d.mask[static_cast<size_t>((b * G + g) * d.capacity + pad) + t] = 1;
    }
  }
  std::vector<int32_t> prefill_mask(static_cast<size_t>(B * P));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < P; ++t)
      prefill_mask[static_cast<size_t>(b * P + t)] = d.mask[static_cast<size_t>(b * G * d.capacity + t)];
  d.prompt_cache = KvCache::allocate(d.model.config(), B, P, d.device);
  Tensor last_logits = d.model.forward_cached(
      Tensor::from_ints(tokens, {B, P}, d.device), Tensor::from_ints(positions, {B, P}, d.device),
      Tensor::from_ints(prefill_mask, {B, P}, d.device), d.prompt_cache,
      /*last_only=*/true);  // [B, 1, V]
  d.cache = KvCache::allocate(d.model.config(), d.R, d.capacity, d.device);
  // Samples of a group read their prompt's keys and values from one shared copy.
  d.cache.share_groups_from(d.prompt_cache, G);
  // [B, V] repeated G times as [B, G, V], in one primitive call on the model's device (times 1.0: exact).
  d.logits = Tensor::empty({d.R, d.V}, d.device);
  d.logits.backend().expand_axis(last_logits.data(), d.logits.mutable_data(), B, G, d.V, 1.0f);
}

void start_rows(Decode& d, const std::vector<PromptInput>& prompts) {
  d.samples.resize(static_cast<size_t>(d.R));
  d.fed.resize(static_cast<size_t>(d.R));
  d.logits_row.resize(static_cast<size_t>(d.R));
  for (int64_t r = 0; r < d.R; ++r) {
    Sample& s = d.samples[static_cast<size_t>(r)];
    s.prompt_id = prompts[static_cast<size_t>(r / d.G)].prompt_id;
    s.sample_index = r % d.G;
    s.prompt_tokens = prompts[static_cast<size_t>(r / d.G)].tokens;
    d.fed[static_cast<size_t>(r)] = static_cast<int32_t>(r);
    d.logits_row[static_cast<size_t>(r)] = r;
  }
  d.done.assign(static_cast<size_t>(d.R), false);
  d.chosen.resize(static_cast<size_t>(d.R));
}

// The fed rows' tokens from their logits (runtime/token_choice.h), each row's uniform keyed by its sample
// and the step; finished rows (fed when they stay in the batch) get a pad. HOST_LOGITS: the logits' copy
// on the host, null where the choice runs on the logits' device.
void choose_tokens(Decode& d, const float* host_logits, int64_t step) {
  const SamplingOptions& o = d.o;
  const int64_t F = static_cast<int64_t>(d.fed.size());
  std::vector<double> uniforms(static_cast<size_t>(F));
  for (int64_t i = 0; i < F; ++i) {
    const Sample& s = d.samples[static_cast<size_t>(d.fed[static_cast<size_t>(i)])];
    uniforms[static_cast<size_t>(i)] = counter_uniform(
        o.seed, s.prompt_id, static_cast<uint64_t>(s.sample_index), static_cast<uint64_t>(step));
  }
  TokenChoiceArgs args;
  args.temperature = o.temperature;
  args.top_k = o.top_k;
  args.top_p = o.top_p;
  args.choice_ids = o.sampleable_ids > 0 ? o.sampleable_ids : d.V;  // a prefix of each row of logits
  std::vector<int32_t> ids(static_cast<size_t>(F));
  if (host_logits)
    backend_for(Device::cpu).choose_tokens(host_logits, uniforms.data(), ids.data(), F, d.V, args);
  else
    ids = ops::choose_tokens(d.logits, uniforms, args).to_int_vector();
  for (int64_t i = 0; i < F; ++i) {
    const size_t r = static_cast<size_t>(d.fed[static_cast<size_t>(i)]);
    d.chosen[r] = d.done[r] ? o.pad_id : ids[static_cast<size_t>(i)];
  }
}

// Log-probs and entropies of the fed rows' chosen tokens under the full temperature-scaled distribution, by
// the training kernel.
ops::LogprobEntropy chosen_logprobs(const Decode& d) {
  const int64_t F = static_cast<int64_t>(d.fed.size());
  std::vector<int32_t> fed_chosen(static_cast<size_t>(F));
  for (int64_t i = 0; i < F; ++i)
    fed_chosen[static_cast<size_t>(i)] = d.chosen[static_cast<size_t>(d.fed[static_cast<size_t>(i)])];
  const float report_temperature = d.o.temperature > 0.0f ? d.o.temperature : 1.0f;
  return ops::token_logprob_entropy(d.logits, Tensor::from_ints(fed_chosen, {F}, d.device),
                                    report_temperature);
}

// Appends each running row's token with its log-prob and entropy and ends the rows that finish. True when
// every row is done.
bool append_tokens(Decode& d, const std::vector<float>& lp, const std::vector<float>& ent) {
  const SamplingOptions& o = d.o;
  bool all_done = true;
  for (int64_t r = 0; r < d.R; ++r) {
    if (d.done[static_cast<size_t>(r)]) continue;
    Sample& s = d.samples[static_cast<size_t>(r)];
    const int32_t tok = d.chosen[static_cast<size_t>(r)];
    s.tokens.push_back(tok);
    s.logprobs.push_back(lp[static_cast<size_t>(d.logits_row[static_cast<size_t>(r)])]);
    s.entropies.push_back(ent[static_cast<size_t>(d.logits_row[static_cast<size_t>(r)])]);
    ++d.generated;
    if (tok == o.eos_id ||
        std::find(o.extra_eos_ids.begin(), o.extra_eos_ids.end(), tok) != o.extra_eos_ids.end()) {
      s.finish = FinishReason::eos;
      d.done[static_cast<size_t>(r)] = true;
    } else if (!o.stop_strings.empty() && ends_with_stop(o.decode(s.tokens), o.stop_strings)) {
      s.finish = FinishReason::stop;
      d.done[static_cast<size_t>(r)] = true;
    } else if (static_cast<int64_t>(s.tokens.size()) == o.max_new_tokens) {
      s.finish = FinishReason::length;
      d.done[static_cast<size_t>(r)] = true;
    }
    all_done = all_done && d.done[static_cast<size_t>(r)];
  }
  return all_done;
}

// Feeds the chosen tokens: the rows still going, or every row with finished ones feeding a pad that
// nothing ever attends to.
void feed_chosen(Decode& d) {
  if (d.drop_finished) {
    d.fed.clear();
    for (int64_t r = 0; r < d.R; ++r)
      if (!d.done[static_cast<size_t>(r)]) d.fed.push_back(static_cast<int32_t>(r));
  }
  const int64_t at = d.cache.length, next = static_cast<int64_t>(d.fed.size());
  std::vector<int32_t> step_tokens(static_cast<size_t>(next)), step_positions(static_cast<size_t>(next));
  std::vector<int32_t> step_mask(static_cast<size_t>(next * (at + 1)));
  for (int64_t i = 0; i < next; ++i) {
    const int64_t r = d.fed[static_cast<size_t>(i)], b = r / d.G;
    d.logits_row[static_cast<size_t>(r)] = i;
    step_tokens[static_cast<size_t>(i)] = d.chosen[static_cast<size_t>(r)];
    step_positions[static_cast<size_t>(i)] = static_cast<int32_t>(at - d.pad[static_cast<size_t>(b)]);
    d.mask[static_cast<size_t>(r * d.capacity + at)] = d.done[static_cast<size_t>(r)] ? 0 : 1;
    std::copy(d.mask.begin() + r * d.capacity, d.mask.begin() + r * d.capacity + at + 1,
              step_mask.begin() + i * (at + 1));
  }
  const Tensor rows = d.drop_finished ? Tensor::from_ints(d.fed, {next}, d.device) : Tensor();
  Tensor out =
      d.model.forward_cached(Tensor::from_ints(step_tokens, {next, 1}, d.device),
                             Tensor::from_ints(step_positions, {next, 1}, d.device),
                             Tensor::from_ints(step_mask, {next, at + 1}, d.device), d.cache, true, rows);
  d.logits = out.view({next, d.V});
}

}  // namespace

std::vector<Sample> sample_groups(const Transformer& model, const std::vector<PromptInput>& prompts,
                                  const SamplingOptions& o, SamplerStats* stats) {
  validate(model, prompts, o);
  NoGradGuard no_grad;
  using Clock = std::chrono::steady_clock;
  Decode d(model, prompts, o);
  Backend& backend = backend_for(d.device);
  const auto t0 = Clock::now();
  prefill(d, prompts);
  backend.synchronize();  // so that the prefill time is the device's, not just the launches'
  const auto t1 = Clock::now();
  start_rows(d, prompts);
  // The decode time by part (SamplerStats). The wait for a step's forward ends at the next step's top, where
  // the logits are read anyway; on the CPU the synchronisation is free.
  double forward_s = 0.0, logits_s = 0.0, choose_s = 0.0, logprob_s = 0.0;
  Clock::time_point mark = t1;
  auto since = [&mark] {
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - mark).count();
    mark = now;
    return s;
  };
  // The CPU reads its logits in place. A device chooses on the device (o.choose_on_device: only ids come
  // back), or copies the logits into one host buffer for every step, of its own kind (page-locked on a GPU):
  // a fresh [R, V] vector per step was a new mapping of pages to fault in each time (tens of MB at a 50k
  // vocabulary).
  const bool logits_on_host = d.device == Device::cpu;
  const bool choose_on_device = !logits_on_host && o.choose_on_device;
  const std::unique_ptr<float, std::function<void(float*)>> logits_buffer(
      logits_on_host || choose_on_device
          ? nullptr
          : static_cast<float*>(backend.allocate_host(static_cast<size_t>(d.R * d.V) * sizeof(float))),
      [&backend](float* p) { backend.free_host(p); });
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    backend.synchronize();
    if (step > 0) forward_s += since();
    mark = Clock::now();
    // Logits come to the host once per step (the only device read of the loop besides the log-probs).
    const size_t fed_bytes = d.fed.size() * static_cast<size_t>(d.V) * sizeof(float);
    if (logits_buffer) backend.copy_to_host(logits_buffer.get(), d.logits.data(), fed_bytes);
    logits_s += since();
    choose_tokens(d, logits_on_host ? d.logits.data() : logits_buffer.get(), step);
    choose_s += since();
    const ops::LogprobEntropy lp_h = chosen_logprobs(d);
    const std::vector<float> lp = lp_h.logprob.to_vector(), ent = lp_h.entropy.to_vector();
    logprob_s += since();
    if (append_tokens(d, lp, ent)) break;
    feed_chosen(d);
  }
  backend.synchronize();
  model.release_decode_weights();
  const auto t2 = Clock::now();
  if (stats) {
    stats->prefill_tokens += d.B * d.prompt_len;
    stats->generated_tokens += d.generated;
    stats->prefill_seconds += std::chrono::duration<double>(t1 - t0).count();
    stats->decode_seconds += std::chrono::duration<double>(t2 - t1).count();
    stats->kv_cache_bytes = d.cache.bytes() + d.prompt_cache.bytes();
    stats->decode_forward_seconds += forward_s;
    stats->decode_logits_seconds += logits_s;
    stats->decode_choose_seconds += choose_s;
    stats->decode_logprob_seconds += logprob_s;
  }
  return std::move(d.samples);
}

SamplerStats& SamplerStats::operator+=(const SamplerStats& o) {
  prefill_tokens += o.prefill_tokens;
  generated_tokens += o.generated_tokens;
  prefill_seconds += o.prefill_seconds;
  decode_seconds += o.decode_seconds;
  kv_cache_bytes += o.kv_cache_bytes;
  decode_forward_seconds += o.decode_forward_seconds;
  decode_logits_seconds += o.decode_logits_seconds;
  decode_choose_seconds += o.decode_choose_seconds;
  decode_logprob_seconds += o.decode_logprob_seconds;
  return *this;
}

}  // namespace gtpo::model
