// gtpo bench: the model workloads, train (one AdamW training step) and rollout (grouped KV-cache sampling),
// mirroring bench_train and bench_rollout of scripts/bench/torch_bench.py.
#include <cstdio>

#include "apps/bench.h"
#include "model/sampler.h"
#include "model/transformer.h"
#include "runtime/error.h"
#include "runtime/ops.h"
#include "runtime/optim/adamw.h"

namespace gtpo::apps::bench {

namespace {
nlohmann::json rates(const std::vector<double>& seconds, double work) {
  nlohmann::json out = nlohmann::json::array();
  for (double s : seconds) out.push_back(work / s);
  return out;
}
std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}
}  // namespace

nlohmann::json bench_train(const Options& o) {
  const ModelShape shape = model_shape(o.shape);
  const model::ModelConfig& c = shape.model;
  const int64_t B = shape.batch, T = shape.seq, V = c.vocab_size;
  model::Transformer model(c, o.device);
  model.init_weights(o.seed);
  optim::AdamWOptions adam;
  adam.lr = 1e-3f;
  adam.weight_decay = 0.1f;
  optim::AdamW optimizer(model.parameters(), adam);

  // B rows of T + 1 tokens: inputs are the first T, targets the last T (loss at all B*T positions).
  const std::vector<int32_t> ids = random_tokens(o.seed, 0, B * (T + 1), V);
  std::vector<int32_t> x, y;
  for (int64_t b = 0; b < B; ++b) {
    x.insert(x.end(), ids.begin() + b * (T + 1), ids.begin() + b * (T + 1) + T);
    y.insert(y.end(), ids.begin() + b * (T + 1) + 1, ids.begin() + (b + 1) * (T + 1));
  }
  const Tensor inputs = Tensor::from_ints(x, {B, T}, o.device), targets = Tensor::from_ints(y, {B * T}, o.device);
  const double baseline = current_rss_mb();
  std::vector<float> losses;

  // As torch_bench.py: zero the gradients first, then forward, loss, backward, optimiser step. item()
  // reads the loss back, as PyTorch's loss.item() does.
  auto step = [&] {
    model.parameters().zero_grad();
    Tensor loss = ops::cross_entropy(ops::reshape(model.forward(inputs), {B * T, V}), targets);
    loss.backward();
    optimizer.step();
    losses.push_back(loss.item());
  };
  const int64_t runs = o.runs > 0 ? o.runs : 5, warmup = o.warmup >= 0 ? o.warmup : 2;
  std::fprintf(stderr, "gtpo: train %s, %lld timed runs after %lld warm-up\n", o.shape.c_str(),
               static_cast<long long>(runs), static_cast<long long>(warmup));
  const std::vector<double> seconds = time_runs(step, runs, warmup, "train step", o.device);
  const double med = median(seconds);
  const double fpt = train_flops_per_token(c, T);
  const double tokens = static_cast<double>(B * T);
  // MFU = (6N + 12LCT) * tokens/s / the GPU's dense peak at this precision (null off the GPU or for a GPU
  // that is not in the peak table).
  nlohmann::json mfu = nullptr, peak = nullptr;
  if (o.device == Device::cuda && !o.gpu_name.empty()) {
    const double p = gpu_peak_flops(o.gpu_name, o.precision);
    if (p > 0.0) {
      mfu = fpt * tokens / med / p;
      peak = p / 1e12;
    }
  }
  return {{"tokens_per_s", tokens / med},
          {"mfu", mfu},
          {"peak_tflops", peak},
          {"runs", rates(seconds, tokens)},
          {"step_s", med},
          {"tokens_per_step", B * T},
          {"gflops", fpt * tokens / med / 1e9},
          {"flops_per_token", fpt},
          {"params", model.parameters().numel()},
          {"matmul_params", matmul_params(c)},
          {"baseline_rss_mb", baseline},
          {"loss_first", losses.front()},
          {"loss_last", losses.back()}};
}

nlohmann::json bench_rollout(const Options& o) {
  const ModelShape shape = model_shape(o.shape);
  const model::ModelConfig& c = shape.model;
  const RolloutShape& r = shape.rollout;
  model::Transformer model(c, o.device);
  model.init_weights(o.seed);
  std::vector<model::PromptInput> prompts(static_cast<size_t>(r.prompts));
  for (int64_t p = 0; p < r.prompts; ++p) {
    prompts[static_cast<size_t>(p)].prompt_id = static_cast<uint64_t>(p);
    prompts[static_cast<size_t>(p)].tokens = random_tokens(o.seed, 1 + static_cast<uint64_t>(p), r.prompt_len, c.vocab_size);
  }
  model::SamplingOptions so;
  so.group_size = r.group;
  so.temperature = 1.0f;
  so.max_new_tokens = r.new_tokens;
  so.seed = o.seed;
  so.eos_id = -1;  // no end-of-sequence: every sample runs the full new_tokens
  so.choose_on_device = o.choose_on_device;
  const double baseline = current_rss_mb();

  std::vector<model::SamplerStats> stats;
  int64_t generated = 0;
  uint64_t digest = 0;  // of every run's tokens: the same seed gives the same tokens in every run
  auto generate = [&] {
    model::SamplerStats s;
    const std::vector<model::Sample> out = model::sample_groups(model, prompts, so, &s);
    stats.push_back(s);
    generated = s.generated_tokens;
    digest = 0xCBF29CE484222325ull;
    for (const model::Sample& sample : out)
      for (int32_t t : sample.tokens) digest = (digest ^ static_cast<uint32_t>(t)) * 0x100000001B3ull;
  };
  const int64_t runs = o.runs > 0 ? o.runs : 5, warmup = o.warmup >= 0 ? o.warmup : 2;
  std::fprintf(stderr, "gtpo: rollout %s, %lld timed runs after %lld warm-up\n", o.shape.c_str(),
               static_cast<long long>(runs), static_cast<long long>(warmup));
  const std::vector<double> seconds = time_runs(generate, runs, warmup, "rollout", o.device);
  const int64_t R = r.prompts * r.group;
  GTPO_CHECK(generated == R * r.new_tokens, "bench: rollout generated ", generated, " tokens, expected ",
             R * r.new_tokens);
  std::vector<double> prefill, decode, forward, to_host, choose, logprob;
  for (size_t i = stats.size() - seconds.size(); i < stats.size(); ++i) {
    prefill.push_back(stats[i].prefill_seconds);
    decode.push_back(stats[i].decode_seconds);
    forward.push_back(stats[i].decode_forward_seconds);
    to_host.push_back(stats[i].decode_logits_seconds);
    choose.push_back(stats[i].decode_choose_seconds);
    logprob.push_back(stats[i].decode_logprob_seconds);
  }
  const double total = median(seconds), decode_s = median(decode);
  const double tokens = static_cast<double>(R * r.new_tokens);
  return {{"tokens_per_s", tokens / total},
          {"runs", rates(seconds, tokens)},
          {"rollout_s", total},
          {"generated_tokens", R * r.new_tokens},
          {"rows", R},
          {"prefill_s", median(prefill)},
          {"decode_s", decode_s},
          // torch_bench.py's definition: the new_tokens - 1 batched decode forwards. gtpo's decode window
          // also samples the first token (and computes every token's log-prob and entropy), so this
          // slightly understates gtpo.
          {"decode_tokens_per_s", static_cast<double>(R * (r.new_tokens - 1)) / decode_s},
          // Where the decode time goes (model::SamplerStats), medians of the timed runs.
          {"decode_forward_s", median(forward)},
          {"decode_logits_to_host_s", median(to_host)},
          {"decode_choose_s", median(choose)},
          {"decode_logprob_s", median(logprob)},
          {"gflops", rollout_flops(c, r) / total / 1e9},
          {"kv_cache_mb", static_cast<double>(stats.back().kv_cache_bytes) / (1024.0 * 1024.0)},
          {"token_choice", o.device == Device::cpu ? "cpu" : (o.choose_on_device ? "device" : "host")},
          // FNV-1a of the generated tokens in sample order, in hex: runs that must sample alike (host and
          // device token choice) compare it.
          {"tokens_digest", hex64(digest)},
          {"baseline_rss_mb", baseline}};
}

}  // namespace gtpo::apps::bench
