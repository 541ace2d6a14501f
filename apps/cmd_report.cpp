// gtpo report: one self-contained HTML page (curves, per-token view, GTPO quantities, eval table, config)
// for one run or several overlaid, or their metrics as CSV.
#include <cstdio>

#include "apps/args.h"
#include "apps/commands.h"
#include "rl/report/run_report.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::apps {

namespace {
const std::vector<FlagSpec> kFlags = {
    {"--out", true, "the HTML file (default: RUN_DIR/report.html for one run, report.html for several)"},
    {"--csv", true,
     "write metrics.jsonl (+ eval.jsonl as eval/KEY columns) of the runs as CSV to this file ('-' = "
     "stdout) instead of the HTML page; with --out, both"},
    {"--max-sample-steps", true, "logged steps of samples.jsonl the page keeps, evenly spaced (default 40)"},
    {"--tensorboard", true,
     "write the runs' scalars as TensorBoard event files under this directory (one run: "
     "DIR/events.out.tfevents.gtpo; several: DIR/RUN_NAME/...) instead of the HTML page; "
     "with --out, both"},
};
}

int run_report(int argc, char** argv) {
  Args args(argc, argv, kFlags);
  if (args.printed_help(
          "gtpo report RUN_DIR [RUN_DIR ...] [--out FILE.html] [--csv FILE.csv] [--tensorboard DIR]",
          "Writes one self-contained HTML file (no network: inline SVG and script) that opens in any\n"
          "browser: curves over steps (several runs overlaid), the logged completions token by token\n"
          "coloured by entropy, shaped reward, advantage or clip side, d_t/h_t profiles, advantages by\n"
          "entropy decile and Cov(log-prob, advantage) per step, the eval table and the config.\n"
          "gtpo train refreshes RUN_DIR/report.html itself at each eval and checkpoint.\n"
          "Every logged key: docs/metrics.md."))
    return 0;
  GTPO_CHECK(!args.positionals().empty(), "report: give at least one RUN_DIR (a train.out_dir; see --help)");
  args.reject_unused("report", true, false);
  rl::ReportLimits limits;
  limits.max_sample_steps = static_cast<int>(args.get_int("--max-sample-steps", limits.max_sample_steps));
  GTPO_CHECK(limits.max_sample_steps >= 1, "report: --max-sample-steps must be at least 1");
  std::vector<nlohmann::json> runs;
  for (const std::string& dir : args.positionals()) runs.push_back(rl::load_run(dir, limits));
  if (args.has("--csv")) {
    const std::string csv = rl::report_csv(runs), path = args.get("--csv", "");
    if (path == "-") {
      std::fputs(csv.c_str(), stdout);
    } else {
      io::write_file_atomic(path, csv);
      std::fprintf(stderr, "report: wrote %s\n", path.c_str());
    }
    if (!args.has("--out") && !args.has("--tensorboard")) return 0;
  }
  if (args.has("--tensorboard")) {
    const std::string dir = args.get("--tensorboard", "");
    for (size_t i = 0; i < runs.size(); ++i) {
      // Several runs: one subdirectory each (TensorBoard's runs), named as the report names them.
      const std::string where =
          runs.size() == 1 ? dir : dir + "/" + std::to_string(i) + "-" + runs[i]["name"].get<std::string>();
      rl::write_tensorboard(runs[i], where);
      std::fprintf(stderr, "report: wrote %s/events.out.tfevents.gtpo\n", where.c_str());
    }
    if (!args.has("--out")) return 0;
  }
  const std::string out =
      args.get("--out", runs.size() == 1 ? args.positionals().front() + "/report.html" : std::string("report.html"));
  io::write_file_atomic(out, rl::render_report_html(runs));
  std::fprintf(stderr, "report: wrote %s (%zu run%s)\n", out.c_str(), runs.size(), runs.size() == 1 ? "" : "s");
  return 0;
}

}  // namespace gtpo::apps
