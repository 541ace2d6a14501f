// Reading a run directory for the report: the JSONL logs line by line (errors name file:line) and the
// sample selection that keeps the page small.
#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "rl/report/run_report.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::rl {
namespace {
namespace fs = std::filesystem;

// Every line of PATH as a JSON object; none when the file does not exist. A last line without its newline
// that does not parse is a line still being written by a live run, and is skipped.
std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::vector<nlohmann::json> rows;
  if (!fs::exists(path)) return rows;
  const std::string text = io::read_file(path);
  std::size_t start = 0;
  int64_t line_no = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const bool complete = end != std::string::npos;
    const std::string line = text.substr(start, complete ? end - start : std::string::npos);
    start = complete ? end + 1 : text.size();
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = io::parse_json(line);
    } catch (const nlohmann::json::exception& e) {
      if (!complete) break;
      fail(path, ":", line_no, ": not a JSON line (", e.what(), ")");
    }
    GTPO_CHECK(j.is_object(), path, ":", line_no, ": expected a JSON object, got ", j.type_name());
    GTPO_CHECK(j.contains("step") && j["step"].is_number(), path, ":", line_no, ": expected a numeric \"step\" key");
    rows.push_back(std::move(j));
  }
  return rows;
}

// metrics.jsonl as columns: "step", then the keys in order of first appearance, one value (or null) per line and key.
// Non-numeric values (text) are left out: the page plots numbers.
nlohmann::json as_columns(const std::vector<nlohmann::json>& rows) {
  std::vector<std::string> keys = {"step"};  // first: the x axis of every curve
  std::map<std::string, std::size_t> seen = {{"step", 0}};
  for (const nlohmann::json& row : rows)
    for (const auto& [k, v] : row.items())
      if ((v.is_number() || v.is_boolean() || v.is_null()) && !seen.count(k)) {
        seen[k] = keys.size();
        keys.push_back(k);
      }
  nlohmann::json columns = nlohmann::json::object();
  for (const std::string& k : keys) {
    nlohmann::json col = nlohmann::json::array();
    for (const nlohmann::json& row : rows) {
      auto it = row.find(k);
      if (it == row.end() || it->is_null() || !(it->is_number() || it->is_boolean()))
        col.push_back(nullptr);
      else
        col.push_back(it->is_boolean() ? nlohmann::json(it->get<bool>() ? 1 : 0) : *it);
    }
    columns[k] = std::move(col);
  }
  return {{"keys", keys}, {"columns", std::move(columns)}};
}

// Keeps at most limits.max_sample_steps logged steps, evenly spaced with the last one included, and at most
// limits.max_samples_per_step responses of each.
nlohmann::json select_samples(const std::vector<nlohmann::json>& rows, const ReportLimits& limits, std::string& note) {
  std::vector<int64_t> steps;
  for (const nlohmann::json& r : rows) {
    const int64_t s = r["step"].get<int64_t>();
    if (steps.empty() || steps.back() != s) steps.push_back(s);
  }
  steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
  std::vector<int64_t> keep = steps;
  const std::size_t cap = static_cast<std::size_t>(std::max(1, limits.max_sample_steps));
  if (steps.size() > cap) {
    keep.clear();
    if (cap == 1) keep.push_back(steps.back());
    for (std::size_t i = 0; cap > 1 && i < cap; ++i) keep.push_back(steps[(steps.size() - 1) * i / (cap - 1)]);
    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
    note = "samples of " + std::to_string(keep.size()) + " of " + std::to_string(steps.size()) + " logged steps";
  }
  std::map<int64_t, int> taken;
  for (int64_t s : keep) taken[s] = 0;
  nlohmann::json out = nlohmann::json::array();
  for (const nlohmann::json& r : rows) {
    auto it = taken.find(r["step"].get<int64_t>());
    if (it == taken.end() || it->second >= limits.max_samples_per_step) continue;
    ++it->second;
    out.push_back(r);
  }
  return out;
}

std::string run_name(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  if (name.empty() || name == ".") name = fs::absolute(p).lexically_normal().filename().string();
  return name.empty() ? dir : name;
}

}  // namespace

nlohmann::json load_run(const std::string& dir, const ReportLimits& limits) {
  GTPO_CHECK(fs::is_directory(dir), "report: ", dir, " is not a directory (expected a run directory, train.out_dir)");
  GTPO_CHECK(fs::exists(dir + "/metrics.jsonl") || fs::exists(dir + "/config.yaml"), "report: ", dir,
             " is not a run directory: it has neither metrics.jsonl nor config.yaml");
  nlohmann::json run;
  run["name"] = run_name(dir);
  run["dir"] = dir;
  run["config"] = fs::exists(dir + "/config.yaml") ? io::read_file(dir + "/config.yaml") : std::string();
  run["metrics"] = as_columns(read_jsonl(dir + "/metrics.jsonl"));
  run["eval"] = read_jsonl(dir + "/eval.jsonl");
  run["sft"] = read_jsonl(dir + "/sft.jsonl");
  std::string note;
  run["samples"] = select_samples(read_jsonl(dir + "/samples.jsonl"), limits, note);
  run["samples_note"] = note;
  return run;
}

}  // namespace gtpo::rl
