// Defaults per algorithm and option parsing.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <fstream>
#include <iterator>

#include "rl/math/algorithm_registry.h"
#include "rl/math/rl_config.h"
#include "runtime/error.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;

TEST_CASE("every algorithm is registered and has its documented defaults") {
  CHECK(algorithm_names() == std::vector<std::string>{"grpo", "dr_grpo", "dapo", "dapo_forking", "gtpo",
                                                      "grpo_s", "rloo", "reinforce_pp", "gspo", "cispo",
                                                      "clip_cov", "kl_cov", "entropy_adv"});
  const RlConfig grpo = defaults_for("grpo");
  CHECK(grpo.algo == "grpo");
  CHECK(grpo.clip_low == 0.2);
  CHECK(grpo.clip_high == 0.2);
  CHECK(grpo.loss_agg == LossAgg::SeqMeanTokenMean);
  CHECK(grpo.overlong == Overlong::None);
  CHECK(defaults_for("dr_grpo").loss_agg == LossAgg::SeqMeanTokenSumNorm);
  CHECK(defaults_for("rloo").loss_agg == LossAgg::TokenMean);
  CHECK(defaults_for("rloo").clip_high == 0.2);
  CHECK(defaults_for("gspo").clip_low == 3e-4);
  CHECK(defaults_for("gspo").clip_high == 4e-4);
  CHECK(defaults_for("cispo").policy_loss == "cispo");
  CHECK(defaults_for("cispo").clip_low == 1.0);
  CHECK(defaults_for("cispo").clip_high == 4.0);
  CHECK(defaults_for("clip_cov").policy_loss == "clip_cov");
  CHECK(defaults_for("clip_cov").clip_cov.ratio == 2e-4);
  CHECK(defaults_for("kl_cov").policy_loss == "kl_cov");
  CHECK(defaults_for("kl_cov").kl_cov.ratio == 2e-3);
  CHECK(defaults_for("entropy_adv").entropy_adv.alpha == 0.4);
  CHECK(defaults_for("entropy_adv").entropy_adv.kappa == 2.0);
  for (const std::string algo : {"grpo", "dr_grpo", "dapo", "gtpo", "grpo_s", "rloo", "reinforce_pp", "gspo"})
    CHECK(defaults_for(algo).policy_loss == "clip");
  for (const std::string algo : {"dapo", "dapo_forking", "gtpo", "grpo_s"}) {
    INFO(algo);
    const RlConfig c = defaults_for(algo);
    CHECK(c.clip_low == 0.2);
    CHECK(c.clip_high == 0.28);
    CHECK(c.dynamic_sampling);
  }
  CHECK(defaults_for("dapo").overlong == Overlong::DapoSoft);
  CHECK(defaults_for("dapo_forking").overlong == Overlong::DapoSoft);
  CHECK(defaults_for("dapo_forking").dapo_forking.rho == 0.2);
  CHECK(defaults_for("dapo").loss_agg == LossAgg::TokenMean);
  CHECK(defaults_for("gtpo").loss_agg == LossAgg::TokenMean);
  CHECK(defaults_for("gtpo").overlong == Overlong::Grop);
  CHECK(defaults_for("grpo_s").overlong == Overlong::Grop);
  const RlConfig g = defaults_for("gtpo");
  CHECK(g.gtpo.alpha1 == 1.0);
  CHECK(g.gtpo.alpha2 == 0.1);
  CHECK(g.gtpo.adv_norm == AdvNorm::Joint);
  CHECK(g.gtpo.scope == Scope::Group);
  CHECK(g.gtpo.weights == MeanKind::Arith);
  CHECK(g.grpo_s.beta1 == 1.0);
  CHECK(g.grpo_s.beta2 == 0.1);
  CHECK(g.grpo_s.ratio == MeanKind::Arith);
  CHECK(g.eps == 1e-6);
  CHECK(g.dual_clip == 0.0);
  CHECK(g.kl_coef == 0.0);
  CHECK(g.entropy_coef == 0.0);
  CHECK(g.ppo_epochs == 1);
  CHECK_FALSE(g.mask_truncated);
}

TEST_CASE("an unknown algorithm lists the known ones") {
  CHECK_THROWS_WITH(defaults_for("ppo"), Contains("unknown algorithm 'ppo'") && Contains("gtpo") &&
                                             Contains("dapo_forking") && Contains("grpo_s"));
}

TEST_CASE("options parse and round-trip through their dotted keys") {
  RlConfig c = defaults_for("gtpo");
  set_rl_option(c, "gtpo.alpha1", "0.9");
  set_rl_option(c, "gtpo.alpha2", "0.2");
  set_rl_option(c, "gtpo.adv_norm", "separate");
  set_rl_option(c, "gtpo.scope", "batch");
  set_rl_option(c, "gtpo.weights", "geo");
  set_rl_option(c, "grpo_s.ratio", "geo");
  set_rl_option(c, "rl.overlong", "dapo_soft");
  set_rl_option(c, "rl.overlong_buffer", "128");
  set_rl_option(c, "rl.dual_clip", "on");
  set_rl_option(c, "rl.loss_agg", "seq-mean-token-sum");
  set_rl_option(c, "rl.dynamic_sampling", "off");
  set_rl_option(c, "rl.kl_estimator", "k2");
  set_rl_option(c, "rl.clip_high", "0.3");
  CHECK(c.gtpo.alpha1 == 0.9);
  CHECK(c.gtpo.adv_norm == AdvNorm::Separate);
  CHECK(c.gtpo.scope == Scope::Batch);
  CHECK(c.gtpo.weights == MeanKind::Geo);
  CHECK(c.grpo_s.ratio == MeanKind::Geo);
  CHECK(c.overlong == Overlong::DapoSoft);
  CHECK(c.overlong_buffer == 128);
  CHECK(c.dual_clip == 3.0);
  CHECK(c.loss_agg == LossAgg::SeqMeanTokenSum);
  CHECK_FALSE(c.dynamic_sampling);
  CHECK(c.kl_estimator == KlEstimator::K2);
  CHECK(c.clip_high == 0.3);
  // Every key's printed value is accepted back and reproduces the same config.
  RlConfig copy = defaults_for("grpo");
  for (const auto& [key, value] : rl_option_values(c)) set_rl_option(copy, key, value);
  CHECK(rl_option_values(copy) == rl_option_values(c));
  CHECK(rl_keys().size() == rl_option_values(c).size());
}

TEST_CASE("option errors name the key and what was expected") {
  RlConfig c = defaults_for("gtpo");
  CHECK_THROWS_AS(set_rl_option(c, "gtpo.alpha3", "1"), gtpo::Error);
  CHECK_THROWS_WITH(set_rl_option(c, "gtpo.alpha3", "1"),
                    Contains("unknown option 'gtpo.alpha3'") && Contains("valid keys") &&
                        Contains("gtpo.alpha1") && Contains("rl.overlong") && Contains("dapo_forking.rho"));
  CHECK_THROWS_WITH(set_rl_option(c, "gtpo.alpha1", "abc"),
                    Contains("gtpo.alpha1: expected number >= 0, got 'abc'"));
  CHECK_THROWS_WITH(set_rl_option(c, "gtpo.alpha1", "1.0x"), Contains("'1.0x'"));
  CHECK_THROWS_WITH(set_rl_option(c, "gtpo.alpha2", "nan"), Contains("gtpo.alpha2: expected number >= 0, got 'nan'"));
  CHECK_THROWS_WITH(set_rl_option(c, "gtpo.alpha2", "-0.1"), Contains("gtpo.alpha2") && Contains(">= 0"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.overlong", "soft"),
                    Contains("rl.overlong") && Contains("none|dapo_soft|grop") && Contains("'soft'"));
  CHECK_THROWS_WITH(set_rl_option(c, "gtpo.adv_norm", "both"), Contains("joint|separate"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.loss_agg", "mean"),
                    Contains("token-mean|seq-mean-token-mean|seq-mean-token-sum|seq-mean-token-sum-norm"));
  CHECK_THROWS_WITH(set_rl_option(c, "dapo_forking.rho", "0"), Contains("dapo_forking.rho") && Contains("(0, 1]"));
  CHECK_THROWS_WITH(set_rl_option(c, "dapo_forking.rho", "1.5"), Contains("(0, 1]"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.dynamic_sampling", "maybe"),
                    Contains("rl.dynamic_sampling") && Contains("true or false"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.ppo_epochs", "0"), Contains("rl.ppo_epochs") && Contains(">= 1"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.ppo_epochs", "1.5"), Contains("expected integer"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.dual_clip", "0.5"), Contains("rl.dual_clip") && Contains("> 1"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.eps", "0"), Contains("rl.eps"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.overlong_buffer", "-3"), Contains("auto"));
  CHECK_THROWS_WITH(set_rl_option(c, "rl.kl_estimator", "k4"), Contains("k1|k2|k3"));
}

namespace {
std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(GTPO_SOURCE_DIR) + "/" + relative);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The `code` spans of TEXT between BEGIN and the first END after it (README's bare names count too:
// every word that is a registered name or has an underscore), sorted.
std::vector<std::string> method_names_between(const std::string& text, const std::string& begin,
                                              const std::string& end) {
  const size_t from = text.find(begin);
  REQUIRE(from != std::string::npos);
  const size_t to = text.find(end, from + begin.size());
  REQUIRE(to != std::string::npos);
  const std::vector<std::string> prose = {"a",  "and",    "are", "compare", "compared", "method", "methods",
                                          "or", "people", "the", "them",    "they",     "with"};
  std::vector<std::string> names;
  std::string word;
  for (size_t i = from + begin.size(); i <= to; ++i) {
    const char c = text[i];
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      word += c;
      continue;
    }
    if (!word.empty() && std::find(prose.begin(), prose.end(), word) == prose.end()) names.push_back(word);
    word.clear();
  }
  std::sort(names.begin(), names.end());
  return names;
}
}  // namespace

TEST_CASE(
    "README's train line and docs/algorithms.md name exactly the registered algorithms, each with a "
    "section") {
  std::vector<std::string> registered = algorithm_names();
  std::sort(registered.begin(), registered.end());
  const std::string readme = read_source_file("README.md");
  CHECK(method_names_between(readme, "then RL with ", "; docs/algorithms.md") == registered);
  const std::string doc = read_source_file("docs/algorithms.md");
  CHECK(method_names_between(doc, "algorithms are registered: the paper's ", ". Each is one file") ==
        registered);
  for (const std::string& name : registered) {
    INFO(name);
    CHECK((doc.find("\n## " + name + " ") != std::string::npos ||
           doc.find("\n## " + name + "\n") != std::string::npos));
  }
}
