// The run report's reading of a run directory (errors name file:line, a live run's half-written last line is
// skipped, unknown keys are kept), its sample selection, the page's data embedding and the CSV export.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "rl/report/run_report.h"
#include "rl/report/tfevents.h"
#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"

using namespace gtpo;
using Catch::Matchers::Contains;

namespace {

std::string sample_line(int step, int problem, const std::string& prompt) {
  nlohmann::json j = {{"step", step},         {"problem", problem},  {"prompt", prompt},   {"answer", "4"},
                      {"completion", "4"},    {"correct", true},     {"truncated", false}, {"tokens", {"4", "<eos>"}},
                      {"logprobs", {-0.1, -0.2}}, {"entropies", {0.5, 0.1}}, {"advantages", {0.3, 0.3}},
                      {"loss_mask", {1, 1}},  {"clip", {0, 0}}};
  return j.dump() + "\n";
}

std::string make_run(const std::string& name) {
  const std::string dir = testing::fresh_temp_dir(name);
  io::write_file_atomic(dir + "/config.yaml", "rl:\n  algo: gtpo\n");
  io::write_file_atomic(dir + "/metrics.jsonl",
                        "{\"step\":1,\"accuracy\":0.25,\"rewards/format/mean\":0.5,\"entropy_adv_corr\":null}\n"
                        "{\"step\":2,\"accuracy\":0.5,\"a_new_key\":3,\"note\":\"text\"}\n"
                        "{\"step\":3,\"accura");  // a live run's line being written
  io::write_file_atomic(dir + "/eval.jsonl", "{\"step\":0,\"greedy_accuracy\":0.1,\"pass@2\":0.3}\n"
                                             "{\"step\":2,\"greedy_accuracy\":0.2,\"pass@2\":0.4}\n");
  std::string samples;
  for (int step = 1; step <= 10; ++step)
    for (int k = 0; k < 5; ++k) samples += sample_line(step, step * 10 + k / 2, "1+3=</script><b>");
  io::write_file_atomic(dir + "/samples.jsonl", samples);
  return dir;
}

}  // namespace

TEST_CASE("report: a run directory becomes the page's data, unknown keys kept, a half-written line skipped",
          "[report]") {
  const std::string dir = make_run("report_load");
  const nlohmann::json run = rl::load_run(dir);
  const auto& m = run["metrics"];
  CHECK(m["keys"] == nlohmann::json({"step", "accuracy", "entropy_adv_corr", "rewards/format/mean", "a_new_key"}));
  CHECK(m["columns"]["step"] == nlohmann::json({1, 2}));
  CHECK(m["columns"]["a_new_key"] == nlohmann::json({nullptr, 3}));
  CHECK(m["columns"]["rewards/format/mean"] == nlohmann::json({0.5, nullptr}));
  CHECK(run["eval"].size() == 2);
  CHECK(run["config"] == "rl:\n  algo: gtpo\n");
  CHECK(run["samples"].size() == 50);
  CHECK(run["samples_note"] == "");
}

TEST_CASE("report: samples keep evenly spaced steps, the last included, and a cap per step", "[report]") {
  const std::string dir = make_run("report_limits");
  rl::ReportLimits limits;
  limits.max_sample_steps = 4;
  limits.max_samples_per_step = 2;
  const nlohmann::json run = rl::load_run(dir, limits);
  std::vector<int> steps;
  for (const auto& s : run["samples"]) steps.push_back(s["step"].get<int>());
  CHECK(steps == std::vector<int>{1, 1, 4, 4, 7, 7, 10, 10});
  CHECK(run["samples_note"] == "samples of 4 of 10 logged steps");
}

TEST_CASE("report: a malformed line is an error naming the file and line", "[report]") {
  const std::string dir = make_run("report_bad");
  io::write_file_atomic(dir + "/eval.jsonl", "{\"step\":0}\nnot json\n{\"step\":1}\n");
  CHECK_THROWS_WITH(rl::load_run(dir), Contains(dir + "/eval.jsonl:2: not a JSON line"));
  io::write_file_atomic(dir + "/eval.jsonl", "{\"greedy_accuracy\":1}\n");
  CHECK_THROWS_WITH(rl::load_run(dir), Contains(dir + "/eval.jsonl:1: expected a numeric \"step\" key"));
  CHECK_THROWS_WITH(rl::load_run(dir + "/nope"), Contains("is not a directory"));
  const std::string empty = testing::fresh_temp_dir("report_empty");
  CHECK_THROWS_WITH(rl::load_run(empty), Contains("neither metrics.jsonl nor config.yaml"));
}

TEST_CASE("report: the page embeds the data without letting it end the script", "[report]") {
  const std::string dir = make_run("report_html");
  const std::string html = rl::render_report_html({rl::load_run(dir)});
  CHECK_THAT(html, Contains("<!DOCTYPE html>"));
  CHECK_THAT(html, !Contains("/*GTPO_DATA*/"));
  CHECK_THAT(html, Contains("1+3=<\\/script><b>"));
  // Only the template's own closing tag; no external resource of any kind.
  CHECK(html.find("</script>") == html.rfind("</script>"));
  std::string without_ns = html;
  for (std::size_t at; (at = without_ns.find("http://www.w3.org/2000/svg")) != std::string::npos;)
    without_ns.erase(at, 26);
  CHECK_THAT(without_ns, !Contains("http:") && !Contains("https:") && !Contains("src="));
}

TEST_CASE("report: CSV has a row per step with metrics and eval columns side by side", "[report]") {
  const std::string dir = make_run("report_csv");
  const std::string csv = rl::report_csv({rl::load_run(dir)});
  const std::string name = std::filesystem::path(dir).filename().string();
  CHECK(csv == "run,step,accuracy,entropy_adv_corr,rewards/format/mean,a_new_key,eval/greedy_accuracy,eval/pass@2\n" +
                   name + ",0,,,,,0.1,0.3\n" + name + ",1,0.25,,0.5,,,\n" + name + ",2,0.5,,,3,0.2,0.4\n");
}

TEST_CASE("report: CSV tells apart runs whose directories share a name", "[report]") {
  const std::string root = testing::fresh_temp_dir("report_csv_names");
  for (const char* parent : {"/a", "/b"}) {
    std::filesystem::create_directories(root + parent + "/run");
    io::write_file_atomic(root + parent + "/run/metrics.jsonl", "{\"step\":1,\"accuracy\":0.5}\n");
  }
  const std::string csv = rl::report_csv({rl::load_run(root + "/a/run"), rl::load_run(root + "/b/run")});
  CHECK(csv == "run,step,accuracy\n" + root + "/a/run,1,0.5\n" + root + "/b/run,1,0.5\n");
}

TEST_CASE("report: TensorBoard's record framing uses CRC-32C and its mask", "[report][tensorboard]") {
  CHECK(rl::crc32c("123456789") == 0xE3069283u);  // the standard check value of CRC-32C
  CHECK(rl::crc32c("") == 0u);
  const uint32_t c = rl::crc32c("abc");
  CHECK(rl::masked_crc32c("abc") == ((c >> 15) | (c << 17)) + 0xA282EAD8u);
  // A writer's first record is the version event: 8-byte length, its masked CRC, the event, its masked CRC.
  const std::string bytes = rl::TfEventsWriter(0.0).bytes();
  REQUIRE(bytes.size() > 16);
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  REQUIRE(bytes.size() == 8 + 4 + length + 4);
  CHECK(bytes.find("brain.Event:2") != std::string::npos);
  uint32_t crc = 0;
  std::memcpy(&crc, bytes.data() + 12 + length, 4);
  CHECK(crc == rl::masked_crc32c(bytes.substr(12, length)));
}
