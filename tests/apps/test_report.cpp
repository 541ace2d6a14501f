// gtpo report end to end: a short real training run, its report opened in headless Chromium (no script error,
// the charts and the per-token view present, hover read-outs working, a screenshot saved), the CSV export, and
// docs/metrics.md naming every key the run wrote.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "apps/commands.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/browser.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Matchers::Contains;
using testing::call_command;
using testing::find_chromium;
using testing::kChromiumFlags;
using testing::selftest_dom;
using testing::shell_quote;
namespace fs = std::filesystem;

namespace {

const std::string kConfig = testing::tiny_run_yaml(
    {{"sampler.group_size", "4"},
     {"sampler.max_new_tokens", "16"},
     {"rl.algo", "gtpo"},
     {"rl.dynamic_sampling", "false"},  // keep every group, so that every step logs samples
     {"sft.steps", "3"},
     {"sft.batch_size", "8"},
     {"train.steps", "4"},
     {"train.prompts_per_step", "3"},
     {"train.checkpoint_every", "2"},
     {"train.sample_every", "1"},
     {"eval.every", "2"},
     {"eval.num_problems", "6"},
     {"eval.k", "2"},
     {"log.samples", "8"}});

// A short real run in a fresh directory; returns its run directory.
std::string train_run(const std::string& name, const std::vector<std::string>& settings = {}) {
  const std::string dir = testing::fresh_temp_dir(name);
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  std::vector<std::string> args = {"train", dir + "/run.yaml", "train.out_dir=" + dir + "/run"};
  args.insert(args.end(), settings.begin(), settings.end());
  REQUIRE(call_command(args, apps::run_train) == 0);
  return dir + "/run";
}

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::istringstream in(io::read_file(path));
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace

TEST_CASE("report: several runs overlay with a toggle per run and one legend entry per key",
          "[report][browser]") {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    FAIL("headless Chromium is needed to test the report page (scripts/setup.sh installs it)");
  const std::string a = train_run("report_runs_a"), b = train_run("report_runs_b");
  const std::string work = fs::path(a).parent_path().string(), html = work + "/both.html";
  REQUIRE(call_command({"report", a, b, "--out", html}, apps::run_report) == 0);
  std::string log;
  const std::string dom = selftest_dom(chromium, html, work, log);
  INFO("chromium log:\n" << log);
  CHECK_THAT(log, !Contains("Uncaught"));
  CHECK_THAT(dom, Contains("data-status=\"ok\""));
  CHECK_THAT(dom, Contains("data-selftest=\"chart-hover-ok\""));
  CHECK_THAT(dom, Contains("data-selftest-toggle=\"toggle-ok\""));
  // The runs' last evaluations side by side, as bars.
  const std::size_t bars = dom.find("data-chart=\"eval-final\"");
  REQUIRE(bars != std::string::npos);
  CHECK(dom.find("<rect", bars) < dom.find("data-chart=", bars + 1));
  // The entropy chart's legend names its two keys once each, not once per run.
  const std::size_t chart = dom.find("data-chart=\"entropy\""), next = dom.find("data-chart=", chart + 1);
  const std::string card = dom.substr(chart, next - chart);
  const auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = card.find(what); at != std::string::npos; at = card.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count("</svg>entropy_mean</span>") == 1);
  CHECK(count("</svg>policy_entropy</span>") == 1);
  fs::remove_all(fs::path(a).parent_path());
  fs::remove_all(fs::path(b).parent_path());
}

// The chart card with data-chart="ID" in DOM.
std::string chart_card(const std::string& dom, const std::string& id) {
  const std::size_t at = dom.find("data-chart=\"" + id + "\"");
  REQUIRE(at != std::string::npos);
  return dom.substr(at, dom.find("data-chart=", at + 1) - at);
}

TEST_CASE("report: a component of another scale or unit is drawn against its own right-hand axis",
          "[report][browser]") {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    FAIL("headless Chromium is needed to test the report page (scripts/setup.sh installs it)");
  const std::string work = testing::fresh_temp_dir("report_axes"), run = work + "/run",
                    html = work + "/r.html";
  fs::create_directories(run);
  std::string metrics, sft;
  for (int step = 1; step <= 5; ++step) {  // seconds_advantages is 1/200 of seconds_step; the KL keys alike
    metrics += "{\"step\":" + std::to_string(step) + ",\"seconds_step\":" + std::to_string(2.0 + 0.1 * step) +
               ",\"seconds_rollout\":1.5,\"seconds_advantages\":0.01,\"approx_kl\":0.4,\"kl_loss\":0.5}\n";
    sft += "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(3.0 - 0.2 * step) +
           ",\"eval_greedy_accuracy\":" + std::to_string(0.1 * step) + "}\n";
  }
  io::write_file_atomic(run + "/metrics.jsonl", metrics);
  io::write_file_atomic(run + "/sft.jsonl", sft);
  REQUIRE(call_command({"report", run, "--out", html}, apps::run_report) == 0);
  std::string log;
  const std::string dom = selftest_dom(chromium, html, work, log);
  INFO("chromium log:\n" << log);
  CHECK_THAT(log, !Contains("Uncaught"));
  CHECK_THAT(dom, Contains("data-status=\"ok\""));
  const std::string time = chart_card(dom, "time"), kl = chart_card(dom, "kl"),
                    sft_card = chart_card(dom, "sft");
  CHECK_THAT(time, Contains("axis-right"));  // by scale
  CHECK_THAT(time, Contains("</svg>seconds_advantages (right axis)</span>"));
  CHECK_THAT(time, Contains("</svg>seconds_rollout</span>"));
  CHECK_THAT(time, Contains("</svg>seconds_step</span>"));
  CHECK_THAT(kl, !Contains("axis-right"));       // one scale: one axis
  CHECK_THAT(sft_card, Contains("axis-right"));  // by unit: an accuracy beside a loss
  CHECK_THAT(sft_card, Contains("</svg>eval_greedy_accuracy (right axis)</span>"));
  CHECK_THAT(sft_card, Contains("</svg>loss</span>"));
  fs::remove_all(work);
}

TEST_CASE("report: a short training run's report runs without script errors in headless Chromium", "[report][browser]") {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    FAIL("headless Chromium is needed to test the report page and was not found on PATH (or in $GTPO_CHROMIUM): "
         "scripts/setup.sh installs it (Debian package chromium)");
  // With a reward program that reports components: the response cards show them.
  const std::string run =
      train_run("report_browser", {"reward.functions[0].name=gsm8k",
                                   "reward.functions[0].command=python3 " + std::string(GTPO_SOURCE_DIR) +
                                       "/examples/rewards/gsm8k_reward.py"});
  // The trainer refreshed the report itself; gtpo report rewrites it from the same files.
  REQUIRE(fs::exists(run + "/report.html"));
  const std::string html = run + "/report.html";
  CHECK_THAT(io::read_file(html), Contains("\"step\":[1,2,3,4]"));  // written after the last step
  REQUIRE(call_command({"report", run, "--out", html}, apps::run_report) == 0);

  const std::string work = fs::path(run).parent_path().string();
  const std::string flags =
      std::string(kChromiumFlags) + " --user-data-dir=" + shell_quote(work + "/chromium-profile");
  std::string log;
  const std::string dom = selftest_dom(chromium, html, work, log);
  INFO("chromium log:\n" << log);
  CHECK_THAT(log, !Contains("Uncaught"));
  CHECK_THAT(dom, !Contains("class=\"script-error\""));
  CHECK_THAT(dom, Contains("data-status=\"ok\""));
  CHECK_THAT(dom, Contains("data-selftest=\"chart-hover-ok\""));
  CHECK_THAT(dom, Contains("data-selftest-token=\"token-hover-ok\""));
  for (const char* chart : {"reward", "accuracy", "eval", "entropy", "length", "truncated", "kept", "clip", "kl",
                            "grad_norm", "lr", "time", "dh-profile", "adv-decile", "adv-hist", "cov"}) {
    INFO("chart " << chart);
    CHECK_THAT(dom, Contains(std::string("data-chart=\"") + chart + "\""));
  }
  const std::size_t eval_chart = dom.find("data-chart=\"eval\"");  // its curves were drawn
  CHECK(dom.find("<path d=\"M", eval_chart) < dom.find("data-chart=", eval_chart + 1));
  CHECK_THAT(dom, Contains("id=\"token-group\""));
  CHECK_THAT(dom, Contains("class=\"note reward\">reward "));
  CHECK_THAT(dom, Contains("reward 0 = gsm8k 0 (format 0, match 0)"));
  std::size_t tokens = 0;
  for (std::size_t at = 0; (at = dom.find("class=\"tok", at)) != std::string::npos; ++at) ++tokens;
  CHECK(tokens >= 8);
  CHECK_THAT(dom, Contains("data-table=\"eval\""));
  CHECK_THAT(dom, Contains("algo: gtpo"));

  const std::string shot = std::string(GTPO_BINARY_DIR) + "/report-screenshot.png";
  fs::remove(shot);
  const std::string screenshot = "timeout 180 " + shell_quote(chromium) + flags + " --window-size=1400,1800 --screenshot=" +
                                 shell_quote(shot) + " " + shell_quote("file://" + fs::absolute(html).string()) +
                                 " > /dev/null 2>&1";
  REQUIRE(std::system(screenshot.c_str()) == 0);
  REQUIRE(fs::exists(shot));
  CHECK(fs::file_size(shot) > 20000);  // a rendered page, not a blank one
  WARN("screenshot of the report: " << shot);
}

TEST_CASE("report: --csv writes metrics and eval per step, and bad arguments are clear errors", "[report]") {
  const std::string run = train_run("report_csv_cmd");
  const std::string csv_path = fs::path(run).parent_path().string() + "/metrics.csv";
  REQUIRE(call_command({"report", run, "--csv", csv_path}, apps::run_report) == 0);
  std::istringstream csv(io::read_file(csv_path));
  std::string header, line;
  std::getline(csv, header);
  CHECK(header.rfind("run,step,", 0) == 0);
  CHECK_THAT(header, Contains(",accuracy,") && Contains(",eval/greedy_accuracy"));
  std::vector<std::string> rows;
  while (std::getline(csv, line)) rows.push_back(line);
  CHECK(rows.size() == 5);  // eval at step 0, then steps 1..4
  CHECK(rows.front().rfind("run,0,", 0) == 0);
  CHECK_FALSE(fs::exists(run + "/report.html.tmp"));
  CHECK_THROWS_WITH(call_command({"report"}, apps::run_report), Contains("give at least one RUN_DIR"));
  CHECK_THROWS_WITH(call_command({"report", run + "/missing"}, apps::run_report), Contains("is not a directory"));
}

TEST_CASE(
    "report: docs/metrics.md documents every key of metrics.jsonl, eval.jsonl, samples.jsonl, sft.jsonl and "
    "segments.jsonl",
    "[report][docs]") {
  const std::string run = train_run("report_docs");
  const std::string doc = io::read_file(std::string(GTPO_SOURCE_DIR) + "/docs/metrics.md");
  for (const char* file : {"metrics.jsonl", "eval.jsonl", "samples.jsonl", "sft.jsonl", "segments.jsonl"}) {
    const std::string heading = std::string("## `") + file + "`";
    const std::size_t at = doc.find(heading);
    INFO("docs/metrics.md section " << heading);
    REQUIRE(at != std::string::npos);
    const std::string section = doc.substr(at, doc.find("\n## ", at + 1) - at);
    std::set<std::string> keys;
    for (const nlohmann::json& line : read_lines(run + "/" + file))
      for (const auto& [k, v] : line.items()) keys.insert(k);
    REQUIRE(!keys.empty());
    for (std::string key : keys) {
      key = std::regex_replace(key, std::regex("^pass@[0-9]+$"), "pass@k");
      key = std::regex_replace(key, std::regex("^rewards/[^/]+/"), "rewards/NAME/");
      INFO("key " << key);
      CHECK_THAT(section, Contains("| `" + key + "` |"));
    }
  }
}

TEST_CASE(
    "report: TensorBoard's own reader reads the run's event file: every metric, eval and SFT value at its "
    "step",
    "[report][tensorboard]") {
  const char* python = std::getenv("GTPO_HF_PYTHON");
  INFO("GTPO_HF_PYTHON is not set: this test runs TensorBoard's reader (scripts/test.sh sets it)");
  REQUIRE(python != nullptr);
  const std::string dir = testing::fresh_temp_dir("report_tensorboard");
  const std::string run = dir + "/run";
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  REQUIRE(call_command({"train", dir + "/run.yaml", "train.out_dir=" + run, "log.tensorboard=true"},
                       apps::run_train) == 0);
  const std::string events = run + "/tensorboard/events.out.tfevents.gtpo";
  REQUIRE(fs::exists(events));
  // gtpo report --tensorboard writes the same bytes from the same files.
  REQUIRE(call_command({"report", run, "--tensorboard", dir + "/tb"}, apps::run_report) == 0);
  CHECK(io::read_file(dir + "/tb/events.out.tfevents.gtpo") == io::read_file(events));
  const std::string out = dir + "/scalars.json";
  const std::string cmd = std::string("'") + python + "' '" + GTPO_SOURCE_DIR +
                          "/scripts/reference/tensorboard_read.py' '" + run + "/tensorboard' > '" + out + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  const nlohmann::json scalars = nlohmann::json::parse(io::read_file(out));
  // The value TensorBoard holds for TAG at STEP (a float32, as the format stores it).
  const auto value_at = [&](const std::string& tag, int64_t step) -> std::optional<double> {
    if (!scalars.contains(tag)) return std::nullopt;
    for (const auto& e : scalars[tag])
      if (e[0].get<int64_t>() == step) return e[1].get<double>();
    return std::nullopt;
  };
  size_t checked = 0;
  const auto check_file = [&](const std::string& file, const std::string& prefix) {
    for (const nlohmann::json& line : read_lines(run + "/" + file)) {
      const int64_t step = line["step"].get<int64_t>();
      for (const auto& [key, v] : line.items()) {
        if (key == "step" || !v.is_number()) continue;
        INFO(file << " step " << step << " key " << key);
        const std::optional<double> got = value_at(prefix + key, step);
        REQUIRE(got.has_value());
        CHECK(*got == static_cast<double>(static_cast<float>(v.get<double>())));
        ++checked;
      }
    }
  };
  check_file("metrics.jsonl", "");
  check_file("eval.jsonl", "eval/");
  check_file("sft.jsonl", "sft/");
  CHECK(checked > 4 * 30);
  CHECK(scalars["accuracy"].size() == 4);  // one value per RL step, nothing else under the tag
  fs::remove_all(dir);
}
