// The methods beside GTPO (rl/math/algorithms/: reinforce_pp, entropy_adv, gspo, cispo, clip_cov, kl_cov) and
// rl.rollout_correction: against the independent numpy reference scripts/reference/rl_methods.py, run here
// with GTPO_HF_PYTHON (its inputs are the ones below: change both together), then properties of each method.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>

#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "rl/math/covariance_selection.h"
#include "rl/policy_loss.h"
#include "runtime/autograd.h"
#include "tests/support/gradcheck.h"
#include "tests/support/spec_group.h"

using namespace gtpo;
using namespace gtpo::rl;

namespace {

// Batch A of the reference: the spec's group (q, c = 1, 1, 0, 0, 10 tokens).
std::vector<Response> batch_a() { return gtpo::testing::spec_group(); }
const std::vector<float> kOld = {-1.0f, -0.5f, -2.0f, -0.3f, -1.2f, -0.8f, -1.5f, -0.2f, -2.5f, -0.9f};
const std::vector<float> kLogprobs = {-0.9f, -0.55f, -1.7f, -0.3f, -1.0f, -0.85f, -1.6f, -0.1f, -2.0f, -1.1f};
const std::vector<float> kSampler = {-1.0f, -0.5f, -2.9f, -0.3f, -1.2f, -0.8f, -1.5f, -0.2f, -3.2f, -0.2f};
const std::vector<int64_t> kBegin = {0, 3, 5, 8}, kEnd = {3, 5, 8, 10};

RlConfig plain(const std::string& algo) {
  RlConfig cfg = defaults_for(algo);
  cfg.overlong = Overlong::None;
  return cfg;
}

// The reference's output, `name = x` or `name = {a, b, ...}` per line, run once.
const std::map<std::string, std::vector<double>>& reference() {
  static const std::map<std::string, std::vector<double>> values = [] {
    const char* python = std::getenv("GTPO_HF_PYTHON");
    INFO("GTPO_HF_PYTHON is not set: these tests run the numpy reference; scripts/test.sh sets it");
    REQUIRE(python != nullptr);
    const std::string command =
        std::string(python) + " " + GTPO_SOURCE_DIR + "/scripts/reference/rl_methods.py";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string text;
    for (char buf[4096]; std::fgets(buf, sizeof buf, pipe) != nullptr;) text += buf;
    REQUIRE(pclose(pipe) == 0);
    std::map<std::string, std::vector<double>> out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      const std::size_t eq = line.find(" = ");
      if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
      std::string numbers = line.substr(eq + 3);
      for (char& ch : numbers)
        if (ch == '{' || ch == '}' || ch == ',') ch = ' ';
      std::istringstream in(numbers);
      std::vector<double>& v = out[line.substr(0, eq)];
      for (double x; in >> x;) v.push_back(x);
    }
    return out;
  }();
  return values;
}

const std::vector<double>& ref(const std::string& name) {
  INFO("the reference prints no " << name);
  REQUIRE(reference().count(name) == 1);
  return reference().at(name);
}

double ref_scalar(const std::string& name) { return ref(name).at(0); }

std::vector<uint8_t> ref_indices(const std::string& name, std::size_t n) {
  std::vector<uint8_t> mask(n, 0);
  for (double i : ref(name)) mask.at(static_cast<std::size_t>(i)) = 1;
  return mask;
}

void check(const std::vector<float>& got, const std::vector<double>& want, double margin = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < want.size(); ++k) {
    INFO("index " << k);
    CHECK(got[k] == Approx(want[k]).margin(margin));
  }
}

std::vector<float> token_advantages(const AdvantageResult& r) {
  std::vector<float> out;
  for (const ResponseResult& x : r.responses) out.insert(out.end(), x.advantages.begin(), x.advantages.end());
  return out;
}

// Batch A's loss inputs under CFG: GRPO advantages, token-mean weights, sequences for a sequence-level loss.
PolicyLossInputs inputs_a(const RlConfig& cfg) {
  const AdvantageResult adv = compute_advantages(batch_a(), cfg);
  PolicyLossInputs in;
  in.old_logprobs = kOld;
  in.advantages = token_advantages(adv);
  in.token_weights.assign(10, 0.1f);
  in.sequence_level = adv.sequence_level_loss;
  if (in.sequence_level) in.seq_ratio = find_algorithm(cfg.algo).sequence_ratio(cfg);
  if (in.sequence_level) {
    in.seq_begin = kBegin;
    in.seq_end = kEnd;
    in.seq_weights.assign(4, 0.25f);
    for (const ResponseResult& r : adv.responses) in.seq_advantages.push_back(r.seq_advantage);
  }
  return in;
}

struct LossAndGrad {
  double loss;
  std::vector<float> grad;
  PolicyLossMetrics metrics;
  ClipStatuses clip;
};

LossAndGrad run_loss(const PolicyLossInputs& in, const RlConfig& cfg,
                     const std::vector<float>& lp = kLogprobs) {
  Tensor logprobs = Tensor::from_vector(lp, {static_cast<int64_t>(lp.size())});
  logprobs.set_requires_grad(true);
  LossAndGrad out;
  Tensor loss = policy_loss(logprobs, Tensor(), in, cfg, &out.metrics, &out.clip);
  out.loss = loss.item();
  loss.backward();
  out.grad = logprobs.grad().to_vector();
  return out;
}

// IS weights of the reference's case 7: ρ = exp(old − sampler), truncated (tis) or masked (mis) at 2.
std::vector<float> is_weights(bool truncate) {
  std::vector<float> w;
  for (std::size_t t = 0; t < kOld.size(); ++t) {
    const double rho = std::exp(static_cast<double>(kOld[t]) - kSampler[t]);
    w.push_back(static_cast<float>(truncate ? std::min(rho, 2.0) : (rho <= 2.0 ? rho : 0.0)));
  }
  return w;
}

}  // namespace

TEST_CASE("methods: advantages match the numpy reference", "[rl][methods]") {
  std::vector<Response> b = batch_a();
  b.push_back({"p", true, false, -1, {0.3f, 0.7f}, std::nullopt});
  b.push_back({"p", false, false, -1, {1.2f}, std::nullopt});
  b.push_back({"p", false, false, -1, {0.9f, 0.1f, 0.6f, 0.8f}, std::nullopt});
  check(token_advantages(compute_advantages(b, plain("reinforce_pp"))), ref("reinforce_pp.adv"));
  check(token_advantages(compute_advantages(batch_a(), plain("entropy_adv"))), ref("entropy_adv.adv"));
  std::vector<Response> all_correct = batch_a();
  for (Response& r : all_correct) r.correct = true;
  check(token_advantages(compute_advantages(all_correct, plain("entropy_adv"))),
        ref("entropy_adv.adv_all_correct"));
}

TEST_CASE("methods: GSPO's loss and gradient match the numpy reference", "[rl][methods]") {
  RlConfig cfg = plain("gspo");
  const LossAndGrad tight = run_loss(inputs_a(cfg), cfg);
  CHECK(tight.loss == Approx(ref_scalar("gspo_tight.loss")).margin(1e-6));
  check(tight.grad, ref("gspo_tight.dlogp"));
  cfg.clip_low = cfg.clip_high = 0.2;
  const LossAndGrad wide = run_loss(inputs_a(cfg), cfg);
  CHECK(wide.loss == Approx(ref_scalar("gspo_02.loss")).margin(1e-6));
  check(wide.grad, ref("gspo_02.dlogp"));
}

TEST_CASE("methods: CISPO's loss and gradient match the numpy reference", "[rl][methods]") {
  RlConfig cfg = plain("cispo");
  const LossAndGrad wide = run_loss(inputs_a(cfg), cfg);
  CHECK(wide.loss == Approx(ref_scalar("cispo_4.loss")).margin(1e-6));
  check(wide.grad, ref("cispo_4.dlogp"));
  cfg.clip_high = 0.28;
  const LossAndGrad capped = run_loss(inputs_a(cfg), cfg);
  CHECK(capped.loss == Approx(ref_scalar("cispo_028.loss")).margin(1e-6));
  check(capped.grad, ref("cispo_028.dlogp"));
  // Every token keeps a gradient, the two whose weight was capped included (PPO's clip drops theirs).
  for (float g : capped.grad) CHECK(g != 0.0f);
  CHECK(capped.clip[2] == ClipStatus::High);
  CHECK(capped.clip[8] == ClipStatus::High);
}

TEST_CASE("methods: Clip-Cov's covariances, band and loss match the numpy reference", "[rl][methods]") {
  RlConfig cfg = plain("clip_cov");
  PolicyLossInputs in = inputs_a(cfg);
  const std::vector<uint8_t> all(10, 1);
  const std::vector<double> cov = token_covariances(kOld, in.advantages, all);
  const std::vector<double>& want = ref("clip_cov.cov");
  REQUIRE(want.size() == 10);
  for (std::size_t t = 0; t < 10; ++t) CHECK(cov[t] == Approx(want[t]).margin(1e-5));
  // Ratio 1: every candidate of the band is picked, whatever the seed.
  CHECK(clip_cov_selection(cov, all, 1.0, 1.0, 5.0, 7) == ref_indices("clip_cov.candidates_1_5", 10));
  in.cov_selected = clip_cov_selection(cov, all, 1.0, 0.1, 5.0, 7);
  CHECK(in.cov_selected == ref_indices("clip_cov.candidates_01_5", 10));
  const LossAndGrad r = run_loss(in, cfg);
  CHECK(r.loss == Approx(ref_scalar("clip_cov.loss")).margin(1e-6));
  check(r.grad, ref("clip_cov.dlogp"));
  CHECK(r.metrics.cov_frac == Approx(0.4));
  CHECK(r.clip[1] == ClipStatus::Selected);
}

TEST_CASE("methods: KL-Cov's selection and loss match the numpy reference", "[rl][methods]") {
  RlConfig cfg = plain("kl_cov");
  PolicyLossInputs in = inputs_a(cfg);
  const std::vector<uint8_t> all(10, 1);
  in.cov_selected = kl_cov_selection(token_covariances(kOld, in.advantages, all), all, 0.2);
  CHECK(in.cov_selected == ref_indices("kl_cov.selected", 10));
  const LossAndGrad r = run_loss(in, cfg);
  CHECK(r.loss == Approx(ref_scalar("kl_cov.loss")).margin(1e-6));
  check(r.grad, ref("kl_cov.dlogp"));
}

TEST_CASE("methods: TIS and MIS weights match the numpy reference", "[rl][methods]") {
  RlConfig cfg = plain("grpo");
  PolicyLossInputs in = inputs_a(cfg);
  const LossAndGrad none = run_loss(in, cfg);
  CHECK(none.loss == Approx(ref_scalar("rollout_is.none.loss")).margin(1e-6));
  check(none.grad, ref("rollout_is.none.dlogp"));
  in.is_weights = is_weights(true);
  const LossAndGrad tis = run_loss(in, cfg);
  CHECK(tis.loss == Approx(ref_scalar("rollout_is.tis.loss")).margin(1e-6));
  check(tis.grad, ref("rollout_is.tis.dlogp"));
  in.is_weights = is_weights(false);
  const LossAndGrad mis = run_loss(in, cfg);
  CHECK(mis.loss == Approx(ref_scalar("rollout_is.mis.loss")).margin(1e-6));
  check(mis.grad, ref("rollout_is.mis.dlogp"));
  // Sequence level (GSPO): ρ_i is the geometric mean of the response's token ρ, truncated at 2.
  RlConfig gspo = plain("gspo");
  gspo.clip_low = gspo.clip_high = 0.2;
  PolicyLossInputs seq = inputs_a(gspo);
  for (std::size_t i = 0; i < 4; ++i) {
    double log_rho = 0.0;
    for (int64_t t = kBegin[i]; t < kEnd[i]; ++t) log_rho += static_cast<double>(kOld[t]) - kSampler[t];
    const double rho = std::exp(log_rho / static_cast<double>(kEnd[i] - kBegin[i]));
    CHECK(rho == Approx(ref("gspo_seq_tis.rho").at(i)).margin(1e-5));
    seq.seq_is_weights.push_back(static_cast<float>(std::min(rho, 2.0)));
  }
  const LossAndGrad s = run_loss(seq, gspo);
  CHECK(s.loss == Approx(ref_scalar("gspo_seq_tis.loss")).margin(1e-6));
  check(s.grad, ref("gspo_seq_tis.dlogp"));
}

TEST_CASE("methods: GSPO's ratio is the geometric mean of the token ratios", "[rl][methods][property]") {
  testing::TestRng rng(11);
  RlConfig cfg = plain("gspo");
  cfg.clip_low = 0.99;  // wide: nothing clipped
  cfg.clip_high = 10.0;
  for (int trial = 0; trial < 20; ++trial) {
    const int len = 1 + rng.integer(0, 11);
    std::vector<float> lp, old;
    double product = 1.0;
    for (int t = 0; t < len; ++t) {
      old.push_back(rng.uniform(-3.0f, -0.1f));
      lp.push_back(old.back() + rng.uniform(-0.3f, 0.3f));
      product *= std::exp(static_cast<double>(lp.back()) - old.back());
    }
    PolicyLossInputs in;
    in.old_logprobs = old;
    in.token_weights.assign(lp.size(), 1.0f);
    in.sequence_level = true;
    in.seq_begin = {0};
    in.seq_end = {len};
    in.seq_advantages = {1.0f};
    in.seq_weights = {1.0f};
    // With Â = 1 and no clip the loss is −s_i = −(Π_t w_t)^(1/|o_i|).
    CHECK(run_loss(in, cfg, lp).loss == Approx(-std::pow(product, 1.0 / len)).epsilon(1e-5));
  }
}

TEST_CASE("methods: Clip-Cov picks exactly its count from the band, the same for the same seed",
          "[rl][methods][property]") {
  testing::TestRng rng(3);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 50 + static_cast<std::size_t>(rng.integer(0, 400));
    std::vector<double> cov;
    std::vector<uint8_t> in_loss;
    for (std::size_t t = 0; t < n; ++t) {
      cov.push_back(rng.uniform(-3.0f, 7.0f));
      in_loss.push_back(rng.uniform() < 0.9 ? 1 : 0);
    }
    const double ratio = trial % 2 ? 0.05 : 2e-4, lb = 1.0, ub = 5.0;
    std::size_t candidates = 0, loss_tokens = 0;
    for (std::size_t t = 0; t < n; ++t) {
      loss_tokens += in_loss[t];
      candidates += in_loss[t] && cov[t] > lb && cov[t] < ub;
    }
    const std::size_t want = std::min<std::size_t>(
        std::max<std::size_t>(1, static_cast<std::size_t>(ratio * loss_tokens)), candidates);
    const std::vector<uint8_t> picked = clip_cov_selection(cov, in_loss, ratio, lb, ub, 100 + trial);
    std::size_t count = 0;
    for (std::size_t t = 0; t < n; ++t) {
      if (!picked[t]) continue;
      ++count;
      CHECK(in_loss[t] == 1);
      CHECK(cov[t] > lb);
      CHECK(cov[t] < ub);
    }
    CHECK(count == want);
    CHECK(clip_cov_selection(cov, in_loss, ratio, lb, ub, 100 + trial) == picked);
    if (want >= 3 && want < candidates) CHECK(clip_cov_selection(cov, in_loss, ratio, lb, ub, 999) != picked);
  }
}

TEST_CASE("methods: KL-Cov picks the loss tokens of largest covariance", "[rl][methods][property]") {
  testing::TestRng rng(4);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 20 + static_cast<std::size_t>(rng.integer(0, 200));
    std::vector<double> cov;
    std::vector<uint8_t> in_loss;
    for (std::size_t t = 0; t < n; ++t) {
      cov.push_back(rng.uniform(-2.0f, 2.0f));
      in_loss.push_back(rng.uniform() < 0.8 ? 1 : 0);
    }
    const std::vector<uint8_t> picked = kl_cov_selection(cov, in_loss, 0.1);
    double lowest_picked = 1e9, highest_left = -1e9;
    std::size_t count = 0, loss_tokens = 0;
    for (std::size_t t = 0; t < n; ++t) {
      loss_tokens += in_loss[t];
      if (picked[t]) ++count, lowest_picked = std::min(lowest_picked, cov[t]);
      if (!picked[t] && in_loss[t]) highest_left = std::max(highest_left, cov[t]);
      if (picked[t]) CHECK(in_loss[t] == 1);
    }
    CHECK(count == std::max<std::size_t>(1, static_cast<std::size_t>(0.1 * loss_tokens)));
    CHECK(lowest_picked >= highest_left);
  }
}

TEST_CASE("methods: the entropy advantage keeps each sign and adds at most |A|/kappa",
          "[rl][methods][property]") {
  testing::TestRng rng(5);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Response> batch;
    for (int i = 0; i < 6; ++i) {
      Response r;
      r.group.assign(1, i < 3 ? 'a' : 'b');  // (a literal here trips GCC 12's false -Wrestrict)
      r.correct = rng.uniform() < 0.5;
      for (int t = 0, len = 1 + rng.integer(0, 7); t < len; ++t)
        r.entropies.push_back(rng.uniform(0.0f, 4.0f));
      batch.push_back(r);
    }
    RlConfig cfg = plain("entropy_adv");
    const AdvantageResult base = compute_advantages(batch, plain("grpo"));
    const AdvantageResult shaped = compute_advantages(batch, cfg);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const double a = base.responses[i].seq_advantage;
      for (std::size_t t = 0; t < batch[i].entropies.size(); ++t) {
        const double s = shaped.responses[i].advantages[t];
        CHECK(s - a >= -1e-6);
        CHECK(s - a <= std::abs(a) / cfg.entropy_adv.kappa + 1e-6);
        CHECK(s - a <= cfg.entropy_adv.alpha * batch[i].entropies[t] + 1e-6);
        if (a != 0.0) CHECK(std::signbit(s) == std::signbit(a));
      }
    }
  }
}

TEST_CASE("methods: REINFORCE++ advantages have mean 0 and unbiased std 1 over the batch's tokens",
          "[rl][methods][property]") {
  testing::TestRng rng(6);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<Response> batch;
    for (int i = 0; i < 12; ++i) {
      Response r;
      r.group = std::to_string(i / 4);
      r.correct = rng.uniform() < 0.4;
      r.entropies.assign(static_cast<std::size_t>(1 + rng.integer(0, 9)), 0.5f);
      batch.push_back(r);
    }
    const std::vector<float> a = token_advantages(compute_advantages(batch, plain("reinforce_pp")));
    double sum = 0.0, sq = 0.0;
    for (float x : a) sum += x;
    const double mean = sum / static_cast<double>(a.size());
    for (float x : a) sq += (x - mean) * (x - mean);
    CHECK(mean == Approx(0.0).margin(1e-5));
    if (sq > 0) CHECK(std::sqrt(sq / static_cast<double>(a.size() - 1)) == Approx(1.0).epsilon(1e-4));
  }
}
