#include <omp.h>

#include <catch2/catch.hpp>

#include "tests/support/determinism.h"
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "runtime/ops.h"
#include "runtime/optim/adamw.h"
#include "runtime/optim/grad_clip.h"
#include "runtime/optim/lr_schedule.h"
#include "runtime/optim/parameters.h"
#include "tests/support/random.h"

using namespace gtpo;
using namespace gtpo::optim;
using namespace gtpo::testing;
using Catch::Contains;

namespace {

// Reference AdamW for one element, in double, PyTorch's formulation.
struct NaiveAdamW {
  double p, m = 0, v = 0;
  void step(double g, int t, double lr, double b1, double b2, double eps, double wd) {
    p -= lr * wd * p;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    const double m_hat = m / (1 - std::pow(b1, t));
    const double v_hat = v / (1 - std::pow(b2, t));
    p -= lr * m_hat / (std::sqrt(v_hat) + eps);
  }
};

}  // namespace

// ---- ParameterStore ------------------------------------------------------------------------------

TEST_CASE("ParameterStore: registration order, lookup, weight-decay defaults, numel, zero_grad", "[optim]") {
  ParameterStore store;
  Tensor w = store.add("model.layers.0.mlp.fc.weight", Tensor::zeros(Shape{3, 4}));
  Tensor b = store.add("model.layers.0.mlp.fc.bias", Tensor::zeros(Shape{3}));
  Tensor g = store.add("model.norm.weight", Tensor::zeros(Shape{4}), true);  // explicit override
  CHECK(store.size() == 3);
  CHECK(store.numel() == 12 + 3 + 4);
  CHECK(store.names() == std::vector<std::string>{"model.layers.0.mlp.fc.weight", "model.layers.0.mlp.fc.bias",
                                                  "model.norm.weight"});
  CHECK(w.requires_grad());
  CHECK(store.get("model.layers.0.mlp.fc.bias").same_storage(b));
  CHECK(store.index_of("model.norm.weight") == 2);
  CHECK(store.weight_decay("model.layers.0.mlp.fc.weight"));
  CHECK_FALSE(store.weight_decay("model.layers.0.mlp.fc.bias"));
  CHECK(store.weight_decay("model.norm.weight"));

  int seen = 0;
  for (const Parameter& p : store) seen += p.tensor.defined() ? 1 : 0;
  CHECK(seen == 3);

  w.set_grad(Tensor::full(Shape{3, 4}, 1.0f));
  g.set_grad(Tensor::full(Shape{4}, 1.0f));
  store.zero_grad();
  for (const Parameter& p : store) CHECK_FALSE(p.tensor.grad().defined());
}

TEST_CASE("ParameterStore: errors name the parameter and list valid names", "[optim][errors]") {
  ParameterStore store;
  store.add("a.weight", Tensor::zeros(Shape{2, 2}));
  store.add("a.bias", Tensor::zeros(Shape{2}));
  CHECK_THROWS_WITH(store.add("a.weight", Tensor::zeros(Shape{2, 2})), Contains("duplicate parameter name 'a.weight'"));
  CHECK_THROWS_WITH(store.get("a.wieght"), Contains("unknown parameter 'a.wieght'") && Contains("a.weight, a.bias"));
  CHECK_THROWS_WITH(store.weight_decay("nope"), Contains("unknown parameter 'nope'"));
  CHECK_THROWS_WITH(store.add("", Tensor::zeros(Shape{1})), Contains("non-empty name"));
  CHECK_THROWS_WITH(store.add("ids", Tensor::from_ints({1, 2}, Shape{2})), Contains("'ids' must be f32"));
  Tensor leaf = Tensor::zeros(Shape{2}).set_requires_grad(true);
  CHECK_THROWS_WITH(store.add("computed", leaf * 2.0f), Contains("'computed' was computed by an op"));
  // A tied weight is one parameter; disjoint views of one flat buffer are fine.
  Tensor flat = Tensor::zeros(Shape{8});
  ParameterStore views;
  views.add("flat", flat);
  CHECK_THROWS_WITH(views.add("tied", flat.view(Shape{2, 4})), Contains("'tied' overlaps the memory of 'flat'"));
  Tensor buffer = Tensor::zeros(Shape{6});
  Tensor first = buffer.view(Shape{6});
  first.impl()->shape = Shape{3};
  Tensor second = buffer.view(Shape{6});
  second.impl()->shape = Shape{3};
  second.impl()->offset = 3;
  ParameterStore disjoint;
  disjoint.add("first", first);
  CHECK_NOTHROW(disjoint.add("second", second));

  ParameterStore many;
  for (int i = 0; i < 8; ++i) many.add(std::string("p").append(std::to_string(i)), Tensor::zeros(Shape{1}));
  CHECK_THROWS_WITH(many.get("q"), Contains("p0, p1, p2, p3, p4, ... (8 in all)"));
  ParameterStore none;
  CHECK_THROWS_WITH(none.get("x"), Contains("store is empty"));
}

// ---- AdamW ---------------------------------------------------------------------------------------

TEST_CASE("AdamW: three steps against a naive double computation, decay on matrices only", "[optim]") {
  ParameterStore store;
  Tensor w = store.add("w", random_tensor(Shape{3, 5}, 1));
  Tensor b = store.add("b", random_tensor(Shape{5}, 2));
  Tensor frozen = store.add("frozen", random_tensor(Shape{4}, 3));  // never gets a gradient
  const std::vector<float> frozen_before = frozen.to_vector();

  AdamWOptions o;
  o.beta1 = 0.8f;
  o.beta2 = 0.95f;
  o.eps = 1e-6f;
  o.weight_decay = 0.1f;
  AdamW opt(store, o);
  const float lrs[] = {0.1f, 0.05f, 0.02f};

  std::vector<NaiveAdamW> ref_w, ref_b;
  for (float x : w.to_vector()) ref_w.push_back({x});
  for (float x : b.to_vector()) ref_b.push_back({x});
  for (int t = 1; t <= 3; ++t) {
    const std::vector<float> gw = random_values(15, 10 + t, -2, 2), gb = random_values(5, 20 + t, -2, 2);
    w.set_grad(Tensor::from_vector(gw, Shape{3, 5}));
    b.set_grad(Tensor::from_vector(gb, Shape{5}));
    opt.step(lrs[t - 1]);
    for (size_t i = 0; i < ref_w.size(); ++i) ref_w[i].step(gw[i], t, lrs[t - 1], o.beta1, o.beta2, o.eps, o.weight_decay);
    for (size_t i = 0; i < ref_b.size(); ++i) ref_b[i].step(gb[i], t, lrs[t - 1], o.beta1, o.beta2, o.eps, 0.0);
  }
  const std::vector<float> got_w = w.to_vector(), got_b = b.to_vector();
  const std::vector<float> m_w = opt.state("w").exp_avg.to_vector(), v_w = opt.state("w").exp_avg_sq.to_vector();
  for (size_t i = 0; i < ref_w.size(); ++i) {
    INFO("w[" << i << "]");
    CHECK(got_w[i] == Approx(ref_w[i].p).margin(1e-6));
    CHECK(m_w[i] == Approx(ref_w[i].m).margin(1e-6));
    CHECK(v_w[i] == Approx(ref_w[i].v).margin(1e-6));
  }
  for (size_t i = 0; i < ref_b.size(); ++i) CHECK(got_b[i] == Approx(ref_b[i].p).margin(1e-6));
  CHECK(opt.state("w").step == 3);
  CHECK(bitwise_equal(frozen.to_vector(), frozen_before));
  CHECK_FALSE(opt.has_state("frozen"));
  CHECK(opt.state_names() == std::vector<std::string>{"w", "b"});
  CHECK_THROWS_WITH(opt.state("frozen"), Contains("'frozen' has no optimiser state"));
  CHECK_THROWS_WITH(opt.state("nope"), Contains("unknown parameter 'nope'"));
}

TEST_CASE("AdamW: a step bumps the parameter version so stale saved tensors are caught", "[optim]") {
  ParameterStore store;
  Tensor w = store.add("w", random_tensor(Shape{4}, 1));
  AdamW opt(store);
  Tensor x = random_tensor(Shape{4}, 2, -1, 1, true);
  Tensor loss = ops::sum_all(ops::mul(w, x));  // mul saves w (for the gradient of x)
  w.set_grad(Tensor::full(Shape{4}, 1.0f));
  opt.step(0.1f);
  CHECK_THROWS_WITH(loss.backward(), Contains("autograd: a tensor saved by"));
}

TEST_CASE("AdamW: option, lr and state errors", "[optim][errors]") {
  ParameterStore store;
  Tensor w = store.add("w", Tensor::zeros(Shape{2, 2}));
  AdamWOptions bad;
  bad.beta1 = 1.0f;
  CHECK_THROWS_WITH(AdamW(store, bad), Contains("beta1 must be in [0, 1)"));
  AdamW opt(store);
  CHECK_THROWS_WITH(opt.step(-1.0f), Contains("lr must be finite"));
  CHECK_THROWS_WITH(opt.set_state("w", 1, Tensor::zeros(Shape{4}), Tensor::zeros(Shape{2, 2})),
                    Contains("'w': exp_avg is f32[4]"));
  CHECK_THROWS_WITH(opt.set_state("w", 0, Tensor::zeros(Shape{2, 2}), Tensor::zeros(Shape{2, 2})),
                    Contains("step must be >= 1"));
  CHECK_THROWS_WITH(opt.set_state("v", 1, Tensor::zeros(Shape{2, 2}), Tensor::zeros(Shape{2, 2})),
                    Contains("unknown parameter 'v'"));
}

TEST_CASE("AdamW: a shard owns its range of the flat parameters and steps only that", "[optim]") {
  ParameterStore store;
  store.add("a", random_tensor(Shape{3, 2}, 1));  // elements 0-5 of the flat vector
  store.add("b", random_tensor(Shape{5}, 2));     // 6-10; shard 1 of 2 owns 5-10
  CHECK_THROWS_WITH(AdamW(store, {}, {2, 2}), Contains("shard 2 of 2 does not exist"));
  ParameterStore whole_store;
  whole_store.add("a", store.get("a").clone());
  whole_store.add("b", store.get("b").clone());
  AdamW shard(store, {}, {1, 2}), whole(whole_store);
  const std::vector<OwnedSlice> owned = shard.owned_slices();
  CHECK(owned[0].flat_offset == 0);
  CHECK(owned[0].first == 5);
  CHECK(owned[0].count == 1);
  CHECK(owned[1].flat_offset == 6);
  CHECK(owned[1].first == 0);
  CHECK(owned[1].count == 5);
  for (ParameterStore* s : {&store, &whole_store})
    for (const Parameter& p : *s) p.tensor.set_grad(random_tensor(p.tensor.shape(), 7));
  shard.step(0.1f);
  whole.step(0.1f);
  // The owned elements move exactly as the whole optimiser moves them; the others stay.
  const std::vector<float> a = store.get("a").to_vector(), a_whole = whole_store.get("a").to_vector();
  const std::vector<float> a_before = random_tensor(Shape{3, 2}, 1).to_vector();
  CHECK(std::vector<float>(a.begin(), a.begin() + 5) ==
        std::vector<float>(a_before.begin(), a_before.begin() + 5));
  CHECK(a[5] == a_whole[5]);
  CHECK(store.get("b").to_vector() == whole_store.get("b").to_vector());
  CHECK(shard.state("a").offset == 5);
  CHECK(shard.state("a").exp_avg.to_vector() == std::vector<float>{whole.state("a").exp_avg.to_vector()[5]});
  CHECK(shard.state_bytes() == 6 * 2 * 4);
  CHECK_THROWS_WITH(shard.full_state(), Contains("is a part"));
  // set_state takes whole moments and keeps the owned part; a shard that owns none keeps nothing.
  AdamW first(store, {}, {0, 4});  // elements 0-1 of 11: part of "a", none of "b"
  first.set_state("b", 3, Tensor::zeros(Shape{5}), Tensor::zeros(Shape{5}));
  CHECK_FALSE(first.has_state("b"));
  first.set_state("a", 3, Tensor::from_vector({1, 2, 3, 4, 5, 6}, {3, 2}), Tensor::zeros(Shape{3, 2}));
  CHECK(first.state("a").exp_avg.to_vector() == std::vector<float>{1, 2});
}

// ---- gradient clipping ---------------------------------------------------------------------------

TEST_CASE("clip_grad_norm: global norm, scaling, disabled and non-finite cases", "[optim]") {
  ParameterStore store;
  Tensor a = store.add("a", Tensor::zeros(Shape{2}));
  Tensor b = store.add("b", Tensor::zeros(Shape{1, 1}));
  store.add("no_grad", Tensor::zeros(Shape{3}));
  auto set = [&] {
    a.set_grad(Tensor::from_vector({3.0f, 0.0f}, Shape{2}));
    b.set_grad(Tensor::from_vector({-4.0f}, Shape{1, 1}));
  };
  set();
  CHECK(clip_grad_norm(store, 10.0f) == 5.0f);
  CHECK(a.grad().to_vector() == std::vector<float>{3.0f, 0.0f});
  CHECK(clip_grad_norm(store, 0.0f) == 5.0f);
  CHECK(b.grad().to_vector() == std::vector<float>{-4.0f});

  const uint32_t version = a.grad().impl()->storage->version;
  CHECK(clip_grad_norm(store, 1.0f) == 5.0f);
  const float coef = static_cast<float>(1.0 / (5.0 + 1e-6));
  CHECK(a.grad().to_vector() == std::vector<float>{3.0f * coef, 0.0f});
  CHECK(b.grad().to_vector() == std::vector<float>{-4.0f * coef});
  CHECK(a.grad().impl()->storage->version != version);
  CHECK(grad_norm(store) == Approx(1.0).margin(1e-6));

  a.set_grad(Tensor::from_vector({std::numeric_limits<float>::quiet_NaN(), 1.0f}, Shape{2}));
  b.set_grad(Tensor::from_vector({-4.0f}, Shape{1, 1}));
  CHECK(std::isnan(clip_grad_norm(store, 1.0f)));
  CHECK(b.grad().to_vector() == std::vector<float>{-4.0f});
  a.set_grad(Tensor::from_vector({std::numeric_limits<float>::infinity(), 1.0f}, Shape{2}));
  CHECK(std::isinf(clip_grad_norm(store, 1.0f)));
  CHECK(b.grad().to_vector() == std::vector<float>{-4.0f});

  store.zero_grad();
  CHECK(clip_grad_norm(store, 1.0f) == 0.0f);
}

// ---- LR schedules --------------------------------------------------------------------------------

TEST_CASE("LrSchedule: constant, warm-up edges, cosine midpoint and end", "[optim]") {
  LrScheduleOptions o;
  o.base_lr = 0.5f;
  CHECK(LrSchedule(o).lr_at(0) == 0.5f);
  CHECK(LrSchedule(o).lr_at(1000000) == 0.5f);

  o.kind = LrScheduleKind::constant_with_warmup;
  o.warmup_steps = 4;
  LrSchedule warm(o);
  CHECK(warm.lr_at(0) == 0.125f);
  CHECK(warm.lr_at(1) == 0.25f);
  CHECK(warm.lr_at(3) == 0.5f);
  CHECK(warm.lr_at(4) == 0.5f);
  CHECK(warm.lr_at(100) == 0.5f);

  o.kind = LrScheduleKind::cosine;
  o.warmup_steps = 10;
  o.total_steps = 110;
  o.min_lr_ratio = 0.1f;
  LrSchedule cos(o);
  CHECK(cos.lr_at(0) == Approx(0.05));
  CHECK(cos.lr_at(9) == Approx(0.5));
  CHECK(cos.lr_at(10) == Approx(0.5));
  CHECK(cos.lr_at(35) == Approx(0.05 + 0.45 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25))));
  CHECK(cos.lr_at(60) == Approx(0.275));  // midpoint: (base + min) / 2
  CHECK(cos.lr_at(110) == Approx(0.05));
  CHECK(cos.lr_at(5000) == Approx(0.05));
  for (int64_t s = 11; s <= 110; ++s) CHECK(cos.lr_at(s) <= cos.lr_at(s - 1));

  o.warmup_steps = 0;  // cosine without warm-up starts at base
  CHECK(LrSchedule(o).lr_at(0) == 0.5f);
}

TEST_CASE("LrSchedule: names and option errors", "[optim][errors]") {
  LrScheduleOptions o;
  o.warmup_steps = 5;
  CHECK_THROWS_WITH(LrSchedule(o), Contains("use 'constant_with_warmup'"));
  o.kind = LrScheduleKind::cosine;
  o.total_steps = 5;
  CHECK_THROWS_WITH(LrSchedule(o), Contains("total_steps > warmup_steps"));
  o.total_steps = 6;
  o.min_lr_ratio = 1.5f;
  CHECK_THROWS_WITH(LrSchedule(o), Contains("min_lr_ratio must be in [0, 1]"));
  o.min_lr_ratio = 0.0f;
  CHECK_THROWS_WITH(LrSchedule(o).lr_at(-1), Contains("step must be >= 0"));
}

// ---- end to end: a small MLP ---------------------------------------------------------------------

namespace {

struct Mlp {
  ParameterStore store;
  Mlp(const std::vector<int64_t>& sizes, uint64_t seed) {
    for (size_t l = 0; l + 1 < sizes.size(); ++l) {
      const float bound = 1.0f / std::sqrt(static_cast<float>(sizes[l]));
      const std::string prefix = "mlp." + std::to_string(l) + ".";
      store.add(prefix + "weight", random_tensor(Shape{sizes[l + 1], sizes[l]}, seed + 2 * l, -bound, bound));
      store.add(prefix + "bias", random_tensor(Shape{sizes[l + 1]}, seed + 2 * l + 1, -bound, bound));
    }
  }
  Tensor forward(const Tensor& x) const {
    Tensor h = x;
    const size_t layers = store.size() / 2;
    for (size_t l = 0; l < layers; ++l) {
      h = ops::linear(h, store.parameters()[2 * l].tensor, store.parameters()[2 * l + 1].tensor);
      if (l + 1 < layers) h = ops::gelu(h);
    }
    return h;
  }
};

struct TrainRun {
  std::vector<float> losses;
  std::vector<std::vector<float>> params;
};

// One training step: MSE loss, backward, clip, AdamW with a scheduled LR. Returns the loss.
float train_step(Mlp& mlp, AdamW& opt, const LrSchedule& schedule, const Tensor& x, const Tensor& y, int64_t step) {
  mlp.store.zero_grad();
  Tensor loss = ops::mean_all(ops::square(ops::sub(mlp.forward(x), y)));
  loss.backward();
  clip_grad_norm(mlp.store, 1.0f);
  opt.step(schedule.lr_at(step));
  return loss.item();
}

// Targets a smooth function of the inputs, so that the loss can go down at any batch size.
Tensor teacher_targets(const Tensor& x) {
  return ops::tanh(ops::linear(x, random_tensor(Shape{5, 13}, 101, -0.5f, 0.5f))).detach();
}

LrSchedule test_schedule() {
  LrScheduleOptions o;
  o.kind = LrScheduleKind::cosine;
  o.base_lr = 0.02f;
  o.warmup_steps = 3;
  o.total_steps = 20;
  o.min_lr_ratio = 0.1f;
  return LrSchedule(o);
}

TrainRun train_mlp(int64_t batch, int steps) {
  Mlp mlp({13, 37, 29, 5}, 7);
  AdamWOptions o;
  o.weight_decay = 0.05f;
  AdamW opt(mlp.store, o);
  const LrSchedule schedule = test_schedule();
  Tensor x = random_tensor(Shape{batch, 13}, 100, -2, 2);
  Tensor y = teacher_targets(x);
  TrainRun run;
  for (int s = 0; s < steps; ++s) run.losses.push_back(train_step(mlp, opt, schedule, x, y, s));
  for (const Parameter& p : mlp.store) run.params.push_back(p.tensor.to_vector());
  return run;
}

void check_identical(const TrainRun& a, const TrainRun& b) {
  CHECK(bitwise_equal(a.losses, b.losses));
  REQUIRE(a.params.size() == b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    INFO("parameter " << i);
    CHECK(bitwise_equal(a.params[i], b.params[i]));
  }
}

// Restores the OpenMP thread count when a test leaves, even by an exception.
struct ThreadCountGuard {
  int saved = omp_get_max_threads();
  ~ThreadCountGuard() { omp_set_num_threads(saved); }
};

}  // namespace

TEST_CASE("determinism: MLP training is bitwise identical run to run and across thread counts",
          "[optim][determinism]") {
  ThreadCountGuard guard;
  // Batch 11 as a small model would see it; batch 1031 makes the elementwise, GEMM and reduction
  // primitives split into several chunks, so the thread count really changes who computes what.
  for (int64_t batch : {int64_t{11}, int64_t{1031}}) {
    INFO("batch " << batch);
    const TrainRun first = train_mlp(batch, 20);
    CHECK(first.losses.back() < 0.5f * first.losses.front());
    for (float l : first.losses) CHECK(std::isfinite(l));
    check_identical(first, train_mlp(batch, 20));
    omp_set_num_threads(1);
    const TrainRun one = train_mlp(batch, 20);
    omp_set_num_threads(2);
    const TrainRun two = train_mlp(batch, 20);
    omp_set_num_threads(guard.saved);
    check_identical(first, one);
    check_identical(one, two);
  }
}

TEST_CASE("AdamW: saving and restoring optimiser state reproduces the following steps bit-exactly",
          "[optim][determinism]") {
  Tensor x = random_tensor(Shape{11, 13}, 100, -2, 2);
  Tensor y = teacher_targets(x);
  const LrSchedule schedule = test_schedule();

  Mlp mlp({13, 37, 29, 5}, 7);
  AdamW opt(mlp.store);
  for (int s = 0; s < 5; ++s) train_step(mlp, opt, schedule, x, y, s);

  // Snapshot by name, as a checkpoint would, through host vectors.
  struct Saved {
    std::vector<float> param, m, v;
    int64_t step;
  };
  std::vector<std::pair<std::string, Saved>> checkpoint;
  for (const Parameter& p : mlp.store) {
    const AdamWParamState& s = opt.state(p.name);
    checkpoint.push_back({p.name, {p.tensor.to_vector(), s.exp_avg.to_vector(), s.exp_avg_sq.to_vector(), s.step}});
  }

  std::vector<float> losses_a;
  for (int s = 5; s < 10; ++s) losses_a.push_back(train_step(mlp, opt, schedule, x, y, s));

  Mlp restored({13, 37, 29, 5}, 999);  // different init: everything must come from the checkpoint
  AdamW opt2(restored.store);
  for (const auto& [name, saved] : checkpoint) {
    const Tensor& p = restored.store.get(name);
    p.copy_(Tensor::from_vector(saved.param, p.shape()));
    opt2.set_state(name, saved.step, Tensor::from_vector(saved.m, p.shape()), Tensor::from_vector(saved.v, p.shape()));
  }
  std::vector<float> losses_b;
  for (int s = 5; s < 10; ++s) losses_b.push_back(train_step(restored, opt2, schedule, x, y, s));

  CHECK(bitwise_equal(losses_a, losses_b));
  for (const Parameter& p : mlp.store) {
    INFO(p.name);
    CHECK(bitwise_equal(p.tensor.to_vector(), restored.store.get(p.name).to_vector()));
    CHECK(bitwise_equal(opt.state(p.name).exp_avg.to_vector(), opt2.state(p.name).exp_avg.to_vector()));
    CHECK(bitwise_equal(opt.state(p.name).exp_avg_sq.to_vector(), opt2.state(p.name).exp_avg_sq.to_vector()));
    CHECK(opt.state(p.name).step == opt2.state(p.name).step);
  }
}
