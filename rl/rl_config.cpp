#include "rl/rl_config.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "rl/algorithm_registry.h"
#include "runtime/error.h"

namespace gtpo::rl {
namespace {

// Appends item to a separated list (spelled out: GCC 12 warns falsely on "sep" + std::string).
void append_item(std::string& list, const char* sep, const std::string& item) {
  if (!list.empty()) list += sep;
  list += item;
}

// Shortest text that reads back as the same double: "0.2", not "0.20000000000000001".
std::string format_double(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

double parse_double(const std::string& key, const std::string& value) {
  const char* begin = value.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  GTPO_CHECK(!value.empty() && end == begin + value.size() && errno == 0 && std::isfinite(v), "option ", key,
             ": expected a finite number, got '", value, "'");
  return v;
}

int parse_int(const std::string& key, const std::string& value) {
  const char* begin = value.c_str();
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(begin, &end, 10);
  GTPO_CHECK(!value.empty() && end == begin + value.size() && errno == 0 && v >= -2147483647L && v <= 2147483647L,
             "option ", key, ": expected an integer, got '", value, "'");
  return static_cast<int>(v);
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "true" || value == "on" || value == "yes" || value == "1") return true;
  if (value == "false" || value == "off" || value == "no" || value == "0") return false;
  fail("option ", key, ": expected true or false (also on/off, yes/no, 1/0), got '", value, "'");
}

// Maps a word to an enum value; the error lists the accepted words.
template <typename E>
E parse_choice(const std::string& key, const std::string& value,
               const std::vector<std::pair<const char*, E>>& choices) {
  std::string accepted;
  for (const auto& [word, v] : choices) {
    if (value == word) return v;
    append_item(accepted, "|", word);
  }
  fail("option ", key, ": expected one of ", accepted, ", got '", value, "'");
}

template <typename E>
std::string choice_name(E v, const std::vector<std::pair<const char*, E>>& choices) {
  for (const auto& [word, c] : choices)
    if (c == v) return word;
  return "?";
}

const std::vector<std::pair<const char*, AdvNorm>> kAdvNorms = {{"joint", AdvNorm::Joint},
                                                                 {"separate", AdvNorm::Separate}};
const std::vector<std::pair<const char*, Scope>> kScopes = {{"group", Scope::Group}, {"batch", Scope::Batch}};
const std::vector<std::pair<const char*, MeanKind>> kMeans = {{"arith", MeanKind::Arith}, {"geo", MeanKind::Geo}};
const std::vector<std::pair<const char*, Overlong>> kOverlongs = {
    {"none", Overlong::None}, {"dapo_soft", Overlong::DapoSoft}, {"grop", Overlong::Grop}};
const std::vector<std::pair<const char*, LossAgg>> kLossAggs = {
    {"token-mean", LossAgg::TokenMean},
    {"seq-mean-token-mean", LossAgg::SeqMeanTokenMean},
    {"seq-mean-token-sum", LossAgg::SeqMeanTokenSum},
    {"seq-mean-token-sum-norm", LossAgg::SeqMeanTokenSumNorm}};
const std::vector<std::pair<const char*, KlEstimator>> kKlEstimators = {
    {"k1", KlEstimator::K1}, {"k2", KlEstimator::K2}, {"k3", KlEstimator::K3}};

struct Option {
  const char* key;
  std::function<void(RlConfig&, const std::string& key, const std::string& value)> set;
  std::function<std::string(const RlConfig&)> get;
};

// A number option checked against [lo, hi] (or (lo, hi] when lo_open).
Option number(const char* key, double RlConfig::*field, double lo, double hi, bool lo_open, const char* what) {
  return {key,
          [=](RlConfig& c, const std::string& k, const std::string& v) {
            const double x = parse_double(k, v);
            GTPO_CHECK((lo_open ? x > lo : x >= lo) && x <= hi, "option ", k, ": expected ", what, ", got '", v,
                       "'");
            c.*field = x;
          },
          [=](const RlConfig& c) { return format_double(c.*field); }};
}

Option integer(const char* key, int RlConfig::*field, int lo, const char* what) {
  return {key,
          [=](RlConfig& c, const std::string& k, const std::string& v) {
            const int x = parse_int(k, v);
            GTPO_CHECK(x >= lo, "option ", k, ": expected ", what, ", got '", v, "'");
            c.*field = x;
          },
          [=](const RlConfig& c) { return std::to_string(c.*field); }};
}

Option boolean(const char* key, bool RlConfig::*field) {
  return {key, [=](RlConfig& c, const std::string& k, const std::string& v) { c.*field = parse_bool(k, v); },
          [=](const RlConfig& c) { return std::string(c.*field ? "true" : "false"); }};
}

// Options inside the gtpo / grpo_s sub-structs.
template <typename Sub, typename T>
Option sub_number(const char* key, Sub RlConfig::*sub, T Sub::*field) {
  return {key,
          [=](RlConfig& c, const std::string& k, const std::string& v) {
            const double x = parse_double(k, v);
            GTPO_CHECK(x >= 0.0, "option ", k, ": expected a number >= 0, got '", v, "'");
            (c.*sub).*field = x;
          },
          [=](const RlConfig& c) { return format_double((c.*sub).*field); }};
}

template <typename Sub, typename E>
Option sub_choice(const char* key, Sub RlConfig::*sub, E Sub::*field, const std::vector<std::pair<const char*, E>>& ch) {
  return {key,
          [=, &ch](RlConfig& c, const std::string& k, const std::string& v) {
            (c.*sub).*field = parse_choice(k, v, ch);
          },
          [=, &ch](const RlConfig& c) { return choice_name((c.*sub).*field, ch); }};
}

template <typename E>
Option choice(const char* key, E RlConfig::*field, const std::vector<std::pair<const char*, E>>& ch) {
  return {key, [=, &ch](RlConfig& c, const std::string& k, const std::string& v) { c.*field = parse_choice(k, v, ch); },
          [=, &ch](const RlConfig& c) { return choice_name(c.*field, ch); }};
}

const std::vector<Option>& options() {
  static const std::vector<Option> all = {
      number("rl.eps", &RlConfig::eps, 0.0, 1.0, true, "a number in (0, 1]"),
      number("rl.clip_low", &RlConfig::clip_low, 0.0, 1.0, false, "a number in [0, 1)"),
      number("rl.clip_high", &RlConfig::clip_high, 0.0, 1e9, false, "a number >= 0"),
      {"rl.dual_clip",
       [](RlConfig& c, const std::string& k, const std::string& v) {
         if (v == "off" || v == "false" || v == "0") {
           c.dual_clip = 0.0;
         } else if (v == "on" || v == "true") {
           c.dual_clip = 3.0;
         } else {
           const double x = parse_double(k, v);
           GTPO_CHECK(x > 1.0, "option ", k, ": expected off, on (= 3.0) or a number > 1, got '", v, "'");
           c.dual_clip = x;
         }
       },
       [](const RlConfig& c) { return c.dual_clip > 0.0 ? format_double(c.dual_clip) : std::string("off"); }},
      choice("rl.loss_agg", &RlConfig::loss_agg, kLossAggs),
      boolean("rl.dynamic_sampling", &RlConfig::dynamic_sampling),
      integer("rl.max_resample_rounds", &RlConfig::max_resample_rounds, 0, "an integer >= 0"),
      choice("rl.overlong", &RlConfig::overlong, kOverlongs),
      {"rl.overlong_buffer",
       [](RlConfig& c, const std::string& k, const std::string& v) {
         if (v == "auto") {
           c.overlong_buffer = -1;
           return;
         }
         const int x = parse_int(k, v);
         GTPO_CHECK(x >= 0, "option ", k, ": expected auto (20% of L_max) or a token count >= 0, got '", v, "'");
         c.overlong_buffer = x;
       },
       [](const RlConfig& c) {
         return c.overlong_buffer < 0 ? std::string("auto") : std::to_string(c.overlong_buffer);
       }},
      integer("sampler.max_new_tokens", &RlConfig::max_new_tokens, 0, "an integer >= 0 (0 = not set)"),
      boolean("rl.mask_truncated", &RlConfig::mask_truncated),
      number("rl.kl_coef", &RlConfig::kl_coef, 0.0, 1e9, false, "a number >= 0"),
      choice("rl.kl_estimator", &RlConfig::kl_estimator, kKlEstimators),
      number("rl.entropy_coef", &RlConfig::entropy_coef, -1e9, 1e9, false, "a finite number"),
      integer("rl.ppo_epochs", &RlConfig::ppo_epochs, 1, "an integer >= 1"),
      integer("rl.mini_batch_prompts", &RlConfig::mini_batch_prompts, 0,
              "an integer >= 0 (0 = every prompt of the step)"),
      number("dapo_forking.rho", &RlConfig::forking_rho, 0.0, 1.0, true, "a fraction in (0, 1]"),
      sub_number("gtpo.alpha1", &RlConfig::gtpo, &GtpoConfig::alpha1),
      sub_number("gtpo.alpha2", &RlConfig::gtpo, &GtpoConfig::alpha2),
      sub_choice("gtpo.adv_norm", &RlConfig::gtpo, &GtpoConfig::adv_norm, kAdvNorms),
      sub_choice("gtpo.scope", &RlConfig::gtpo, &GtpoConfig::scope, kScopes),
      sub_choice("gtpo.weights", &RlConfig::gtpo, &GtpoConfig::weights, kMeans),
      sub_number("grpo_s.beta1", &RlConfig::grpo_s, &GrpoSConfig::beta1),
      sub_number("grpo_s.beta2", &RlConfig::grpo_s, &GrpoSConfig::beta2),
      sub_choice("grpo_s.weights", &RlConfig::grpo_s, &GrpoSConfig::weights, kMeans),
      sub_choice("grpo_s.ratio", &RlConfig::grpo_s, &GrpoSConfig::ratio, kMeans),
  };
  return all;
}

}  // namespace

RlConfig defaults_for(const std::string& algo) {
  const Algorithm& a = find_algorithm(algo);
  RlConfig cfg;
  cfg.algo = a.name;
  a.set_defaults(cfg);
  return cfg;
}

void set_rl_option(RlConfig& cfg, const std::string& key, const std::string& value) {
  for (const Option& o : options()) {
    if (key == o.key) {
      o.set(cfg, key, value);
      return;
    }
  }
  std::string valid;
  for (const Option& o : options()) append_item(valid, ", ", o.key);
  fail("unknown option '", key, "'; valid keys: ", valid);
}

std::vector<std::string> rl_option_keys() {
  std::vector<std::string> keys;
  for (const Option& o : options()) keys.emplace_back(o.key);
  return keys;
}

std::vector<std::pair<std::string, std::string>> rl_option_values(const RlConfig& cfg) {
  std::vector<std::pair<std::string, std::string>> values;
  for (const Option& o : options()) values.emplace_back(o.key, o.get(cfg));
  return values;
}

int overlong_buffer_tokens(const RlConfig& cfg) {
  if (cfg.overlong_buffer >= 0) return cfg.overlong_buffer;
  return cfg.max_new_tokens / 5;  // 20% of L_max, rounded down
}

const char* to_string(LossAgg v) {
  for (const auto& [word, c] : kLossAggs)
    if (c == v) return word;
  return "?";
}

LossAgg parse_loss_agg(const std::string& s) { return parse_choice("rl.loss_agg", s, kLossAggs); }

}  // namespace gtpo::rl
