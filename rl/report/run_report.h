// The run report: one self-contained HTML file (inline SVG and script, no network) with a run's curves,
// its logged completions token by token, the GTPO quantities per step, the eval table and the config;
// several runs overlay. It reads the run directory's files (config.yaml, metrics.jsonl, eval.jsonl,
// samples.jsonl, sft.jsonl) and does no RL math; the page is rl/report/report_template.html with the data
// as JSON. Also a CSV of metrics.jsonl (and eval.jsonl) for spreadsheets. docs/report.md shows a report.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gtpo::rl {

struct ReportLimits {
  // samples.jsonl grows with the run: the page keeps at most this many logged steps (evenly spaced, the last
  // always included) and this many responses per step.
  int max_sample_steps = 40;
  int max_samples_per_step = 64;
};

// Everything the page shows about the run in DIR, as the page's JSON: {name, dir, config, metrics: {keys,
// columns}, eval: [...], sft: [...], samples: [...], samples_note}. Throws gtpo::Error naming the file and
// line of a malformed JSONL line; a last line cut short (a run still writing) is skipped.
nlohmann::json load_run(const std::string& dir, const ReportLimits& limits = {});

// The HTML page for RUNS (each from load_run).
std::string render_report_html(const std::vector<nlohmann::json>& runs);

// metrics.jsonl of RUNS as CSV: columns run, step, every metrics key, then eval.jsonl's keys as eval/KEY on
// the row of the same step. Missing values are empty cells.
std::string report_csv(const std::vector<nlohmann::json>& runs);

// The run's scalars as TensorBoard's event file (bytes): every numeric metrics.jsonl key at its RL step
// (tag = the key), eval.jsonl's as eval/KEY, sft.jsonl's as sft/KEY (at warm-start steps). Wall times are
// the run's start (segments.jsonl) plus the steps' seconds, so the same files always give the same bytes.
std::string tensorboard_events(const nlohmann::json& run);
// Writes DIR/events.out.tfevents.gtpo atomically (DIR is created): TensorBoard's --logdir reads it.
void write_tensorboard(const nlohmann::json& run, const std::string& dir);

}  // namespace gtpo::rl
