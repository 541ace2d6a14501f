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
#include "runtime/parallel.h"
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

int32_t choose_token(const float* logits, int64_t vocab, float temperature, int64_t top_k, float top_p, double u,
                     std::vector<std::pair<double, int32_t>>& scratch) {
  if (temperature <= 0.0f) {
    int32_t best = 0;
    for (int64_t i = 1; i < vocab; ++i)
      if (logits[i] > logits[best]) best = static_cast<int32_t>(i);
    return best;
  }
  const double inv_t = 1.0 / temperature;
  double max_z = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) max_z = std::max(max_z, logits[i] * inv_t);
  scratch.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    scratch[static_cast<size_t>(i)] = {std::exp(logits[i] * inv_t - max_z), static_cast<int32_t>(i)};
  size_t kept = scratch.size();
  const bool use_top_k = top_k > 0 && top_k < vocab;
  const bool use_top_p = top_p < 1.0f;
  if (use_top_k || use_top_p) {
    // Most probable first; ties by lower id, so the order is fully determined.
    auto by_prob = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
    if (use_top_k) {
      kept = static_cast<size_t>(top_k);
      std::partial_sort(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(kept), scratch.end(), by_prob);
    } else {
      std::sort(scratch.begin(), scratch.end(), by_prob);
    }
    if (use_top_p) {
      double total = 0.0;
      for (size_t i = 0; i < kept; ++i) total += scratch[i].first;
      double cumulative = 0.0;
      size_t n = 0;
      while (n < kept) {
        cumulative += scratch[n++].first;
        if (cumulative >= top_p * total) break;
      }
      kept = std::max<size_t>(n, 1);
    }
  }
  double mass = 0.0;
  for (size_t i = 0; i < kept; ++i) mass += scratch[i].first;
  double target = u * mass, running = 0.0;
  for (size_t i = 0; i < kept; ++i) {
    running += scratch[i].first;
    if (target < running) return scratch[i].second;
  }
  return scratch[kept - 1].second;  // u * mass rounded up to the total
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

std::vector<Sample> sample_groups(const Transformer& model, const std::vector<PromptInput>& prompts,
                                  const SamplingOptions& o, SamplerStats* stats) {
  validate(model, prompts, o);
  NoGradGuard no_grad;
  using Clock = std::chrono::steady_clock;
  const Device device = model.device();
  const int64_t B = static_cast<int64_t>(prompts.size()), G = o.group_size, R = B * G;
  const int64_t V = model.config().vocab_size;
  int64_t prompt_len = 0;
  for (const PromptInput& p : prompts) prompt_len = std::max<int64_t>(prompt_len, static_cast<int64_t>(p.tokens.size()));
  const int64_t capacity = prompt_len + o.max_new_tokens;

  // ---- prefill: prompts left-padded to one length, pads masked out, positions counted from each
  // prompt's first real token.
  auto t0 = Clock::now();
  std::vector<int32_t> tokens(static_cast<size_t>(B * prompt_len), o.pad_id), positions(tokens.size(), 0);
  std::vector<int32_t> mask(static_cast<size_t>(R * capacity), 0);  // per decode row, over the whole cache
  std::vector<int64_t> pad(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& pt = prompts[static_cast<size_t>(b)].tokens;
    pad[static_cast<size_t>(b)] = prompt_len - static_cast<int64_t>(pt.size());
    for (size_t t = 0; t < pt.size(); ++t) {
      const size_t at = static_cast<size_t>(b * prompt_len + pad[static_cast<size_t>(b)]) + t;
      tokens[at] = pt[t];
      positions[at] = static_cast<int32_t>(t);
      for (int64_t g = 0; g < G; ++g) mask[static_cast<size_t>((b * G + g) * capacity + pad[static_cast<size_t>(b)]) + t] = 1;
    }
  }
  std::vector<int32_t> prefill_mask(static_cast<size_t>(B * prompt_len));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < prompt_len; ++t)
      prefill_mask[static_cast<size_t>(b * prompt_len + t)] = mask[static_cast<size_t>(b * G * capacity + t)];
  KvCache prompt_cache = KvCache::allocate(model.config(), B, prompt_len, device);
  Tensor last_logits = model.forward_cached(Tensor::from_ints(tokens, {B, prompt_len}, device),
                                            Tensor::from_ints(positions, {B, prompt_len}, device),
                                            Tensor::from_ints(prefill_mask, {B, prompt_len}, device), prompt_cache,
                                            /*last_only=*/true);  // [B, 1, V]
  KvCache cache = KvCache::allocate(model.config(), R, capacity, device);
  // Samples of a group read their prompt's keys and values from one shared copy where the backend can.
  if (backend_for(device).supports(Capability::attention_prefix))
    cache.share_groups_from(prompt_cache, G);
  else
    cache.fill_groups_from(prompt_cache, G);
  // Each decode row starts from its prompt's last logits: [B, V] repeated G times as [B, G, V], in one
  // primitive call on the model's device (times 1.0, which is exact).
  Tensor logits = Tensor::empty({R, V}, device);
  logits.backend().expand_axis(last_logits.data(), logits.mutable_data(), B, G, V, 1.0f);
  logits.backend().synchronize();  // so that the prefill time is the device's, not just the launches'
  auto t1 = Clock::now();

  // ---- decode
  std::vector<Sample> samples(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) {
    Sample& s = samples[static_cast<size_t>(r)];
    s.prompt_id = prompts[static_cast<size_t>(r / G)].prompt_id;
    s.sample_index = r % G;
    s.prompt_tokens = prompts[static_cast<size_t>(r / G)].tokens;
  }
  std::vector<bool> done(static_cast<size_t>(R), false);
  std::vector<int32_t> chosen(static_cast<size_t>(R));
  // The rows fed at the last forward, in order (row i of logits is row fed[i]); with drop_finished_rows the
  // finished ones leave it, else it stays every row.
  const bool drop_finished = o.drop_finished_rows && backend_for(device).supports(Capability::attention_kv_rows);
  std::vector<int32_t> fed(static_cast<size_t>(R));
  for (int64_t r = 0; r < R; ++r) fed[static_cast<size_t>(r)] = static_cast<int32_t>(r);
  std::vector<int64_t> logits_row(static_cast<size_t>(R));  // row r's row of logits (valid while r is fed)
  for (int64_t r = 0; r < R; ++r) logits_row[static_cast<size_t>(r)] = r;
  const float report_temperature = o.temperature > 0.0f ? o.temperature : 1.0f;
  const int64_t choice_ids = o.sampleable_ids > 0 ? o.sampleable_ids : V;  // a prefix of each row of logits
  int64_t generated = 0;
  // The decode time by part (SamplerStats). The wait for a step's forward ends at the next step's top, where
  // the logits are read anyway; on the CPU the synchronisation is free.
  double forward_s = 0.0, logits_s = 0.0, choose_s = 0.0, logprob_s = 0.0;
  auto since = [](Clock::time_point& t) {
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - t).count();
    t = now;
    return s;
  };
  Clock::time_point mark = t1;
  // The CPU reads its logits in place. A device copies them into one host buffer for every step, of its own
  // kind (page-locked on a GPU): a fresh [R, V] vector per step was a new mapping of pages to fault in each
  // time (tens of MB at a 50k vocabulary).
  Backend& backend = backend_for(device);
  const bool logits_on_host = device == Device::cpu;
  const size_t logits_buffer_bytes = static_cast<size_t>(R * V) * sizeof(float);
  const std::unique_ptr<float, std::function<void(float*)>> logits_buffer(
      logits_on_host ? nullptr : static_cast<float*>(backend.allocate_host(logits_buffer_bytes)),
      [&backend](float* p) { backend.free_host(p); });
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    backend.synchronize();
    if (step > 0) forward_s += since(mark);
    mark = Clock::now();
    // Logits come to the host once per step (the only device read of the loop besides the log-probs);
    // rows are independent, so they are chosen in parallel with the same result as one by one.
    const int64_t F = static_cast<int64_t>(fed.size());
    if (!logits_on_host)
      backend.copy_to_host(logits_buffer.get(), logits.data(), static_cast<size_t>(F * V) * sizeof(float));
    const float* host_logits = logits_on_host ? logits.data() : logits_buffer.get();
    logits_s += since(mark);
    parallel_for(R, grain_for(8 * V), [&](int64_t r0, int64_t r1) {
      std::vector<std::pair<double, int32_t>> scratch;
      for (int64_t r = r0; r < r1; ++r) {
        const Sample& s = samples[static_cast<size_t>(r)];
        const double u = counter_uniform(o.seed, s.prompt_id, static_cast<uint64_t>(s.sample_index),
                                         static_cast<uint64_t>(step));
        chosen[static_cast<size_t>(r)] =
            done[static_cast<size_t>(r)]
                ? o.pad_id
                : choose_token(host_logits + logits_row[static_cast<size_t>(r)] * V, choice_ids,
                               o.temperature, o.top_k, o.top_p, u, scratch);
      }
    });
    choose_s += since(mark);
    // Log-probs and entropies of the full temperature-scaled distribution, by the training kernel.
    std::vector<int32_t> fed_chosen(static_cast<size_t>(F));
    for (int64_t i = 0; i < F; ++i)
      fed_chosen[static_cast<size_t>(i)] = chosen[static_cast<size_t>(fed[static_cast<size_t>(i)])];
    ops::LogprobEntropy lp_h =
        ops::token_logprob_entropy(logits, Tensor::from_ints(fed_chosen, {F}, device), report_temperature);
    std::vector<float> lp = lp_h.logprob.to_vector(), ent = lp_h.entropy.to_vector();
    logprob_s += since(mark);
    bool all_done = true;
    for (int64_t r = 0; r < R; ++r) {
      if (done[static_cast<size_t>(r)]) continue;
      Sample& s = samples[static_cast<size_t>(r)];
      const int32_t tok = chosen[static_cast<size_t>(r)];
      s.tokens.push_back(tok);
      s.logprobs.push_back(lp[static_cast<size_t>(logits_row[static_cast<size_t>(r)])]);
      s.entropies.push_back(ent[static_cast<size_t>(logits_row[static_cast<size_t>(r)])]);
      ++generated;
      if (tok == o.eos_id ||
          std::find(o.extra_eos_ids.begin(), o.extra_eos_ids.end(), tok) != o.extra_eos_ids.end()) {
        s.finish = FinishReason::eos;
        done[static_cast<size_t>(r)] = true;
      } else if (!o.stop_strings.empty() && ends_with_stop(o.decode(s.tokens), o.stop_strings)) {
        s.finish = FinishReason::stop;
        done[static_cast<size_t>(r)] = true;
      } else if (static_cast<int64_t>(s.tokens.size()) == o.max_new_tokens) {
        s.finish = FinishReason::length;
        done[static_cast<size_t>(r)] = true;
      }
      all_done = all_done && done[static_cast<size_t>(r)];
    }
    if (all_done) break;
    // Feed the chosen tokens: the rows still going, or every row with finished ones feeding a pad that
    // nothing ever attends to.
    if (drop_finished) {
      fed.clear();
      for (int64_t r = 0; r < R; ++r)
        if (!done[static_cast<size_t>(r)]) fed.push_back(static_cast<int32_t>(r));
    }
    const int64_t at = cache.length, next = static_cast<int64_t>(fed.size());
    std::vector<int32_t> step_tokens(static_cast<size_t>(next)), step_positions(static_cast<size_t>(next));
    std::vector<int32_t> step_mask(static_cast<size_t>(next * (at + 1)));
    for (int64_t i = 0; i < next; ++i) {
      const int64_t r = fed[static_cast<size_t>(i)], b = r / G;
      logits_row[static_cast<size_t>(r)] = i;
      step_tokens[static_cast<size_t>(i)] = chosen[static_cast<size_t>(r)];
      step_positions[static_cast<size_t>(i)] = static_cast<int32_t>(at - pad[static_cast<size_t>(b)]);
      mask[static_cast<size_t>(r * capacity + at)] = done[static_cast<size_t>(r)] ? 0 : 1;
      std::copy(mask.begin() + r * capacity, mask.begin() + r * capacity + at + 1, step_mask.begin() + i * (at + 1));
    }
    const Tensor rows = drop_finished ? Tensor::from_ints(fed, {next}, device) : Tensor();
    Tensor out = model.forward_cached(Tensor::from_ints(step_tokens, {next, 1}, device),
                                      Tensor::from_ints(step_positions, {next, 1}, device),
                                      Tensor::from_ints(step_mask, {next, at + 1}, device), cache, true, rows);
    logits = out.view({next, V});
  }
  backend_for(device).synchronize();
  model.release_decode_weights();
  auto t2 = Clock::now();
  if (stats) {
    stats->prefill_tokens += B * prompt_len;
    stats->generated_tokens += generated;
    stats->prefill_seconds += std::chrono::duration<double>(t1 - t0).count();
    stats->decode_seconds += std::chrono::duration<double>(t2 - t1).count();
    stats->kv_cache_bytes = cache.bytes() + prompt_cache.bytes();
    stats->decode_forward_seconds += forward_s;
    stats->decode_logits_seconds += logits_s;
    stats->decode_choose_seconds += choose_s;
    stats->decode_logprob_seconds += logprob_s;
  }
  return samples;
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
