// A run's scalars as a TensorBoard event file (rl/report/tfevents.h), from the same files the report reads.
#include <time.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "rl/report/run_report.h"
#include "rl/report/tfevents.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::rl {

namespace {

// The run's first segment's start (segments.jsonl, "started", UTC), in seconds since the epoch; 0 when the
// run has no such line (a run from before segments.jsonl).
double run_start(const std::string& dir) {
  const std::string path = dir + "/segments.jsonl";
  if (!std::filesystem::exists(path)) return 0.0;
  std::istringstream in(io::read_file(path));
  std::string line;
  if (!std::getline(in, line)) return 0.0;
  const nlohmann::json first = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!first.is_object() || !first.contains("started") || !first["started"].is_string()) return 0.0;
  std::tm tm{};
  const std::string started = first["started"];
  if (strptime(started.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm) == nullptr) return 0.0;
  return static_cast<double>(timegm(&tm));
}

// The numeric values of one JSONL row as (PREFIX + key, value), "step" and non-finite values left out.
std::vector<std::pair<std::string, double>> numbers_of(const nlohmann::json& row, const std::string& prefix) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [k, v] : row.items())
    if (k != "step" && v.is_number() && std::isfinite(v.get<double>()))
      out.emplace_back(prefix + k, v.get<double>());
  return out;
}

}  // namespace

std::string tensorboard_events(const nlohmann::json& run) {
  const double start = run_start(run["dir"].get<std::string>());
  TfEventsWriter w(start);
  double sft_time = start;
  for (const nlohmann::json& row : run["sft"]) {
    sft_time += row.value("seconds", 0.0);
    w.scalars(row.value("step", int64_t{0}), sft_time, numbers_of(row, "sft/"));
  }
  // RL steps from the metrics' columns, row by row; wall time runs on from the warm start's.
  const nlohmann::json& columns = run["metrics"]["columns"];
  const size_t rows = columns.contains("step") ? columns["step"].size() : 0;
  std::map<int64_t, double> time_at_step = {{0, sft_time}};
  double time = sft_time;
  for (size_t i = 0; i < rows; ++i) {
    nlohmann::json row = nlohmann::json::object();
    for (const auto& [k, column] : columns.items()) row[k] = column[i];
    if (!row["step"].is_number()) continue;
    const int64_t step = row["step"].get<int64_t>();
    if (row["seconds_step"].is_number()) time += row["seconds_step"].get<double>();
    time_at_step[step] = time;
    w.scalars(step, time, numbers_of(row, ""));
  }
  for (const nlohmann::json& row : run["eval"]) {
    const int64_t step = row.value("step", int64_t{0});
    const auto at = time_at_step.find(step);
    w.scalars(step, at != time_at_step.end() ? at->second : time, numbers_of(row, "eval/"));
  }
  return w.bytes();
}

void write_tensorboard(const nlohmann::json& run, const std::string& dir) {
  io::make_directories(dir, "tensorboard directory");
  io::write_file_atomic(dir + "/events.out.tfevents.gtpo", tensorboard_events(run));
}

}  // namespace gtpo::rl
