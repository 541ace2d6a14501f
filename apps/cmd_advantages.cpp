// gtpo advantages: shaped rewards and advantages for rollouts a user brings as JSONL.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/args.h"
#include "apps/commands.h"
#include "apps/method_help.h"
#include "apps/rollout_line.h"
#include "rl/math/advantages.h"
#include "rl/math/algorithm_registry.h"
#include "runtime/config_codec.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/input_file.h"

namespace gtpo::apps {
namespace {

// Ordered: output fields keep the documented order (group, shaped, advantages, ...).
using json = nlohmann::ordered_json;

// A mistake on the command line (exit code 2) rather than in the data.
struct UsageError : Error {
  using Error::Error;
};

void print_usage(std::ostream& os, const std::string& algo) {
  os << "usage: gtpo advantages --algo NAME [key=value ...] --in ROLLOUTS.jsonl --out OUT.jsonl\n"
        "                       [--diagnostics DIAG.json]\n"
        "\n"
        "Computes shaped rewards and per-token advantages for your own rollouts.\n"
        "\n"
        "Input, one JSON object per line:\n"
        "  {\"group\": \"q1\", \"correct\": true, \"entropies\": [0.7, 1.2, ...], \"truncated\": false}\n"
        "  group: prompt key (string or integer); correct: verifier outcome; entropies: H of the old policy "
        "per\n"
        "  response token; truncated (default false): hit max_new_tokens, counts as incorrect;\n"
        "  length (optional): defaults to the number of entropies ("
     << algorithm_names_where(&rl::Algorithm::needs_entropies, false)
     << " accept a bare length).\n"
        "Output, one line per input line, same order:\n"
        "  {\"group\": ..., \"shaped\": [...] | number | null, \"advantages\": [...], \"loss_mask\": [...],\n"
        "   \"dropped\": bool[, \"seq_advantage\": number]}\n"
        "  shaped is per token for "
     << algorithm_names_where(&rl::Algorithm::token_level_shaping, true)
     << ", one number otherwise, null for a group dropped by dynamic sampling.\n"
        "A one-line JSON summary of the diagnostics goes to stdout; --diagnostics writes them in full.\n"
        "\n"
        "Algorithms:\n";
  os << algorithm_lines();
  // With --algo, show that algorithm's defaults; the keys are the same for every algorithm.
  const bool known = !algo.empty() && [&] {
    for (const std::string& n : rl::algorithm_names())
      if (n == algo) return true;
    return false;
  }();
  os << "\nOptions (key=value, applied after the algorithm's defaults; see docs/algorithms.md)";
  os << (known ? ", defaults for " + algo + ":\n" : "; gtpo advantages --algo NAME --help shows NAME's defaults:\n");
  for (const auto& [key, value] : rl::rl_option_values(rl::defaults_for(known ? algo : "grpo")))
    os << "  " << key << (known ? "=" + value : std::string()) << "\n";
  os << "  sampler.max_new_tokens" << (known ? "=(unset)" : "") << "  L_max, needed by rl.overlong=dapo_soft\n";
}

const std::vector<FlagSpec> kFlags = {{"--algo", true, "the algorithm (required)"},
                                      {"--in", true, "rollouts JSONL (required)"},
                                      {"--out", true, "output JSONL (required)"},
                                      {"--diagnostics", true, "write the full diagnostics JSON here"}};

// The shortest decimal that reads back as the same float: 1.16, not 1.159999966621399.
double tidy(float v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  *res.ptr = '\0';
  return std::strtod(buf, nullptr);
}

json tidy_array(const std::vector<float>& v) {
  json a = json::array();
  for (float x : v) a.push_back(tidy(x));
  return a;
}

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// The options of the command line, checked before any file is read: a mistake here is a usage error.
struct Settings {
  rl::RlConfig cfg;
  int max_new_tokens = 0;  // L_max for rl.overlong=dapo_soft (sampler.max_new_tokens)
};

json summary(const rl::AdvantageResult& res, std::size_t n, bool full, const Settings& settings) {
  const rl::Diagnostics& d = res.diagnostics;
  json s = {{"algo", res.algo},
            {"responses", n},
            {"groups", d.groups},
            {"dropped_groups", d.dropped_groups},
            {"dropped_group_fraction", d.dropped_group_fraction},
            {"tokens", d.tokens},
            {"tokens_in_loss", d.tokens_in_loss},
            {"frac_correct_negative", d.frac_correct_negative},
            {"frac_incorrect_positive", d.frac_incorrect_positive},
            {"entropy_adv_corr", number_or_null(d.entropy_adv_corr)},
            {"entropy_adv_corr_correct", number_or_null(d.entropy_adv_corr_correct)},
            {"entropy_adv_corr_incorrect", number_or_null(d.entropy_adv_corr_incorrect)},
            {"overlong_penalised", d.overlong_penalised},
            {"overlong_penalty_mean", d.overlong_penalty_mean},
            {"overlong_penalty_min", d.overlong_penalty_min},
            {"truncated", d.truncated}};
  if (full) {
    s["d_profile"] = d.d_profile;
    s["h_profile"] = d.h_profile;
    json c = json::object();
    for (const auto& [key, value] : rl::rl_option_values(settings.cfg)) c[key] = value;
    if (settings.max_new_tokens > 0) c["sampler.max_new_tokens"] = std::to_string(settings.max_new_tokens);
    s["config"] = c;
  }
  return s;
}


Settings read_settings(const Args& args) {
  if (!args.has("--algo")) throw UsageError("missing --algo NAME");
  if (!args.has("--in")) throw UsageError("missing --in ROLLOUTS.jsonl");
  if (!args.has("--out")) throw UsageError("missing --out OUT.jsonl");
  GTPO_CHECK(args.positionals().empty(), "unexpected argument '", args.positionals().front(), "' (options are key=value)");
  Settings s;
  s.cfg = rl::defaults_for(args.get("--algo", ""));
  for (const auto& [key, value] : args.overrides()) {
    if (key == "sampler.max_new_tokens") {
      try {
        s.max_new_tokens = config::integer<int>(1, 2147483647).parse(value);
      } catch (const Error& e) {
        fail(key, ": ", e.what());
      }
    } else {
      rl::set_rl_option(s.cfg, key, value);
    }
  }
  return s;
}

int run(const Args& args, const Settings& settings) {
  const rl::RlConfig& cfg = settings.cfg;
  const std::string in_path = args.get("--in", ""), out_path = args.get("--out", "");
  const rl::Algorithm& algo = rl::find_algorithm(cfg.algo);

  io::check_input_file(in_path, io::kMaxInputBytes, "--in");
  std::ifstream in(in_path);
  GTPO_CHECK(in.good(), "cannot open input file '", in_path, "'");
  std::vector<rl::Response> batch;
  std::vector<json> groups;
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = in_path + ":" + std::to_string(line_no);
    json group;
    rl::Response r = parse_rollout_line(line, where, group);
    rl::validate_response(r, algo.needs_entropies, where);
    batch.push_back(std::move(r));
    groups.push_back(std::move(group));
  }
  GTPO_CHECK(!in.bad(), "error while reading '", in_path, "'");
  GTPO_CHECK(!batch.empty(), in_path, ": no rollouts (the file is empty)");

  rl::BatchContext context;
  context.max_new_tokens = settings.max_new_tokens;
  const rl::AdvantageResult res = rl::compute_advantages(batch, cfg, context);
  std::string out;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const rl::ResponseResult& r = res.responses[i];
    json o = {{"group", groups[i]}};
    if (r.dropped)
      o["shaped"] = nullptr;
    else if (res.token_level_shaping)
      o["shaped"] = tidy_array(r.shaped);
    else
      o["shaped"] = tidy(r.shaped.at(0));
    o["advantages"] = tidy_array(r.advantages);
    o["loss_mask"] = r.loss_mask;
    o["dropped"] = r.dropped;
    if (!res.token_level_shaping) o["seq_advantage"] = tidy(r.seq_advantage);
    out += o.dump();
    out += '\n';
  }
  io::write_file_atomic(out_path, out);
  if (args.has("--diagnostics"))
    io::write_file_atomic(args.get("--diagnostics", ""), summary(res, batch.size(), true, settings).dump(2) + "\n");
  std::cout << summary(res, batch.size(), false, settings).dump() << "\n";
  return 0;
}

}  // namespace

int run_advantages(int argc, char** argv) {
  std::optional<Args> args;
  Settings settings;
  try {
    args.emplace(argc, argv, kFlags);
    if (args->help()) {
      print_usage(std::cout, args->get("--algo", ""));
      return 0;
    }
    settings = read_settings(*args);
  } catch (const Error& e) {
    std::cerr << "gtpo advantages: error: " << e.what() << "\n(run 'gtpo advantages --help' for usage)\n";
    return 2;
  }
  try {
    return run(*args, settings);
  } catch (const Error& e) {
    std::cerr << "gtpo advantages: error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gtpo::apps
