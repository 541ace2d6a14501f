// metrics.jsonl (with eval.jsonl beside it) as one CSV table over runs.
#include <map>
#include <set>
#include <sstream>

#include "rl/report/run_report.h"

namespace gtpo::rl {
namespace {

std::string csv_cell(const nlohmann::json& v) {
  if (v.is_null()) return "";
  if (v.is_number() || v.is_boolean()) return v.dump();
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::string report_csv(const std::vector<nlohmann::json>& runs) {
  std::vector<std::string> metric_keys, eval_keys;
  std::set<std::string> seen_m, seen_e;
  for (const nlohmann::json& run : runs) {
    for (const auto& k : run["metrics"]["keys"])
      if (k != "step" && seen_m.insert(k.get<std::string>()).second) metric_keys.push_back(k);
    for (const auto& row : run["eval"])
      for (const auto& [k, v] : row.items())
        if (k != "step" && seen_e.insert(k).second) eval_keys.push_back(k);
  }
  // The run column: the directory's name, or its path where two runs share a name (a/run, b/run).
  std::map<std::string, int> name_count;
  for (const nlohmann::json& run : runs) ++name_count[run["name"].get<std::string>()];
  auto label = [&](const nlohmann::json& run) {
    return name_count[run["name"].get<std::string>()] > 1 ? run["dir"] : run["name"];
  };
  std::ostringstream out;
  out << "run,step";
  for (const std::string& k : metric_keys) out << ',' << csv_cell(k);
  for (const std::string& k : eval_keys) out << ',' << csv_cell("eval/" + k);
  out << '\n';
  for (const nlohmann::json& run : runs) {
    // One row per step that has a metrics line or an eval line (eval at step 0 comes before any RL step).
    std::map<int64_t, std::size_t> metric_row;
    std::map<int64_t, const nlohmann::json*> eval_row;
    const nlohmann::json& cols = run["metrics"]["columns"];
    const nlohmann::json& steps = cols.contains("step") ? cols["step"] : nlohmann::json::array();
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i].is_number()) metric_row[steps[i].get<int64_t>()] = i;
    for (const auto& row : run["eval"]) eval_row[row["step"].get<int64_t>()] = &row;
    std::set<int64_t> all;
    for (const auto& [s, i] : metric_row) all.insert(s);
    for (const auto& [s, r] : eval_row) all.insert(s);
    for (int64_t s : all) {
      out << csv_cell(label(run)) << ',' << s;
      auto m = metric_row.find(s);
      for (const std::string& k : metric_keys) {
        out << ',';
        if (m != metric_row.end() && cols.contains(k)) out << csv_cell(cols[k][m->second]);
      }
      auto e = eval_row.find(s);
      for (const std::string& k : eval_keys) {
        out << ',';
        if (e != eval_row.end() && e->second->contains(k)) out << csv_cell((*e->second)[k]);
      }
      out << '\n';
    }
  }
  return out.str();
}

}  // namespace gtpo::rl
