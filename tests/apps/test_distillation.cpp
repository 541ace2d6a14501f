// On-policy distillation (rl/distillation.h): a teacher equal to the student gives exactly 0 and the update
// of the outcome reward alone; another teacher gives −(log π_s − log π_t) equal to `gtpo score` of both
// models token by token; a teacher of another vocabulary is refused by name; a run with a teacher resumes
// bit for bit.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "apps/run_setup.h"
#include "data/tokenizer/char_tokenizer.h"
#include "model/checkpoint.h"
#include "rl/distillation.h"
#include "rl/rl_step.h"
#include "rl/run/trainer.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/browser.h"
#include "tests/support/commands.h"
#include "tests/support/run_config.h"

using namespace gtpo;
using Catch::Matchers::Contains;
using testing::call_command;
namespace fs = std::filesystem;

namespace {
const std::string kConfig = testing::tiny_run_yaml({{"sampler.group_size", "4"},
                                                    {"sampler.max_new_tokens", "12"},
                                                    {"rl.algo", "gtpo"},
                                                    {"rl.dynamic_sampling", "false"},
                                                    {"sft.steps", "0"},
                                                    {"train.prompts_per_step", "3"},
                                                    {"train.seed", "5"},
                                                    {"train.checkpoint_every", "2"},
                                                    {"train.sample_every", "1"},
                                                    {"eval.every", "0"},
                                                    {"log.samples", "12"}});

// A freshly initialised model of kConfig with train.seed SEED, saved to DIR (the tokenizer beside it).
void save_fresh_model(const std::string& dir, uint64_t seed) {
  rl::RunConfig c = rl::parse_run_config(kConfig, "test config", {{"train.seed", std::to_string(seed)}});
  apps::RunObjects run = apps::build_run(c);
  model::save_model(dir, *run.model, run.tokenizer.get());
}

struct StepRun {
  rl::RlStepResult result;
  std::vector<std::vector<float>> weights;  // after the step
};

// One RL step of a student started from STUDENT, with TEACHER ("" = none).
StepRun one_step(const std::string& student, const std::string& teacher) {
  rl::RunConfig c =
      rl::parse_run_config(kConfig, "test config", {{"train.init_from", student}, {"teacher.path", teacher}});
  apps::RunObjects run = apps::build_run(c);
  REQUIRE((run.teacher != nullptr) == !teacher.empty());
  optim::AdamW optimizer(run.model->parameters(), rl::adam_options(c.optim));
  const rl::RlStepModels models{
      *run.model,       nullptr, optimizer, *run.tokenizer, *run.source, nullptr, dist::single_process(),
      run.teacher.get()};
  uint64_t cursor = 0;
  StepRun out{rl::rl_step(models, c, cursor, 1, 1e-2f), {}};
  for (const optim::Parameter& p : run.model->parameters()) out.weights.push_back(p.tensor.to_vector());
  return out;
}

// `gtpo score` of every item's prompt + completion under CHECKPOINT at temperature 1: the log-probs.
std::vector<std::vector<double>> scored_logprobs(const rl::RolloutBatch& batch, const std::string& checkpoint,
                                                 const std::string& dir) {
  std::ostringstream in;
  for (const rl::RolloutItem& it : batch.items) {
    std::vector<int32_t> tokens = it.sample.prompt_tokens;
    tokens.insert(tokens.end(), it.sample.tokens.begin(), it.sample.tokens.end());
    in << nlohmann::json{{"tokens", tokens}, {"prompt_len", it.sample.prompt_tokens.size()}}.dump() << "\n";
  }
  io::write_file_atomic(dir + "/score_in.jsonl", in.str());
  REQUIRE(call_command({"score", "--checkpoint", checkpoint, "--in", dir + "/score_in.jsonl", "--out",
                        dir + "/score_out.jsonl", "--temperature", "1"},
                       apps::run_score) == 0);
  std::istringstream out(io::read_file(dir + "/score_out.jsonl"));
  std::vector<std::vector<double>> logprobs;
  for (std::string line; std::getline(out, line);)
    logprobs.push_back(nlohmann::json::parse(line)["logprobs"].get<std::vector<double>>());
  return logprobs;
}
// The report of RUN at #mode=teacher: the group it opens with (the last logged step's first problem) has
// each token coloured by its logged log π_t as the page's log-prob scale does (rgba(31, 100, 200, a),
// a = 0.06 + 0.8 · min(1, −log π_t / max |log π_t|) over the group), underlined exactly where the teacher's
// most likely token is another, and a token's hover shows the teacher's read-out.
void check_teacher_view(const std::string& dir, const std::string& run) {
  const std::string chromium = testing::find_chromium();
  if (chromium.empty())
    FAIL("headless Chromium is needed to test the report page (scripts/setup.sh installs it)");
  REQUIRE(call_command({"report", run, "--out", dir + "/report.html"}, apps::run_report) == 0);
  std::string log;
  const std::string dom = testing::selftest_dom(chromium, dir + "/report.html", dir, log, "&mode=teacher");
  INFO("chromium log:\n" << log);
  CHECK_THAT(dom, Contains("data-status=\"ok\""));
  CHECK_THAT(dom, Contains("teacher log-prob log π_t: -"));  // the scale's label: this mode is shown
  CHECK_THAT(dom, Contains("\nteacher      log π_t "));      // the hovered token's read-out
  std::istringstream lines(io::read_file(run + "/samples.jsonl"));
  std::vector<nlohmann::json> samples;
  for (std::string line; std::getline(lines, line);) samples.push_back(nlohmann::json::parse(line));
  const int64_t step = samples.back()["step"].get<int64_t>();
  int64_t problem = -1, disagree = 0;
  std::vector<double> teacher;
  for (const nlohmann::json& s : samples) {
    if (s["step"].get<int64_t>() != step) continue;
    if (problem < 0) problem = s["problem"].get<int64_t>();
    if (s["problem"].get<int64_t>() != problem) continue;
    for (double v : s["teacher_logprobs"].get<std::vector<double>>()) teacher.push_back(v);
    for (size_t t = 0; t < s["tokens"].size(); ++t) disagree += s["teacher_argmax"][t] != s["tokens"][t];
  }
  double max = 0;
  for (double v : teacher) max = std::max(max, std::abs(v));
  const std::vector<std::array<double, 4>> shown = testing::token_colours(dom);
  REQUIRE(shown.size() == teacher.size());
  for (size_t t = 0; t < teacher.size(); ++t) {
    INFO("token " << t << ": log pi_t " << teacher[t]);
    CHECK((shown[t][0] == 31 && shown[t][1] == 100 && shown[t][2] == 200));
    // Chromium keeps an 8-bit alpha and prints the shortest decimal of that byte: within one step, 1/255
    CHECK(shown[t][3] == Approx(0.06 + 0.8 * std::min(1.0, -teacher[t] / max)).margin(1.0 / 255));
  }
  const std::size_t group = dom.find("id=\"token-group\"");
  int64_t underlined = 0;
  for (std::size_t at = dom.find("tok disagree", group); at != std::string::npos;
       at = dom.find("tok disagree", at + 1))
    ++underlined;
  CHECK(underlined == disagree);
  CHECK(disagree > 0);  // a random teacher disagrees somewhere
}
}  // namespace

TEST_CASE("distillation: a teacher equal to the student gives exactly 0 and the outcome-only update",
          "[apps][distillation]") {
  const std::string dir = testing::fresh_temp_dir("distill_same");
  save_fresh_model(dir + "/student", 1);
  const StepRun with = one_step(dir + "/student", dir + "/student"), without = one_step(dir + "/student", "");
  REQUIRE(!with.result.batch.items.empty());
  for (const rl::RolloutItem& it : with.result.batch.items) {
    REQUIRE(it.reward.token_rewards.size() == it.sample.tokens.size());
    for (double r : it.reward.token_rewards) CHECK(r == 0.0);
    CHECK(it.teacher_logprobs.size() == it.sample.tokens.size());
  }
  CHECK(with.result.metrics["distill/reverse_kl_mean"].get<double>() == 0.0);
  CHECK(with.weights == without.weights);  // bit for bit
  CHECK(!without.result.metrics.contains("distill/reverse_kl_mean"));
  fs::remove_all(dir);
}

TEST_CASE("distillation: the token rewards are gtpo score's log π_t − log π_s, token by token",
          "[apps][distillation]") {
  const std::string dir = testing::fresh_temp_dir("distill_score");
  save_fresh_model(dir + "/student", 1);
  save_fresh_model(dir + "/teacher", 2);
  const StepRun run = one_step(dir + "/student", dir + "/teacher");
  const rl::RolloutBatch& batch = run.result.batch;
  const auto student = scored_logprobs(batch, dir + "/student", dir);
  const auto teacher = scored_logprobs(batch, dir + "/teacher", dir);
  REQUIRE(student.size() == batch.items.size());
  double kl_sum = 0, disagree = 0, tokens = 0, nonzero = 0;
  for (size_t i = 0; i < batch.items.size(); ++i) {
    const rl::RolloutItem& it = batch.items[i];
    REQUIRE(it.reward.token_rewards.size() == student[i].size());
    for (size_t k = 0; k < student[i].size(); ++k) {
      INFO("item " << i << " token " << k);
      CHECK(it.reward.token_rewards[k] == -(student[i][k] - teacher[i][k]));  // exact: the same function
      CHECK(static_cast<double>(it.teacher_logprobs[k]) == teacher[i][k]);
      kl_sum += student[i][k] - teacher[i][k];
      disagree += it.teacher_argmax[k] != it.sample.tokens[k];
      nonzero += it.reward.token_rewards[k] != 0.0;
      tokens += 1;
    }
  }
  CHECK(nonzero > 0);  // two different models
  CHECK(run.result.metrics["distill/reverse_kl_mean"].get<double>() ==
        Approx(kl_sum / tokens).epsilon(1e-12));
  CHECK(run.result.metrics["distill/disagree_frac"].get<double>() == Approx(disagree / tokens));
  CHECK(run.result.metrics["seconds_teacher"].get<double>() >= 0.0);
  fs::remove_all(dir);
}

TEST_CASE("distillation: a teacher of another vocabulary is refused, naming both", "[apps][distillation]") {
  const data::CharTokenizer run("abc"), bigger("abcd"), other("abd");
  CHECK_THROWS_WITH(
      rl::check_same_vocabulary(run, "tokenizer.kind char", bigger, "/teachers/t1"),
      Catch::Contains("/teachers/t1") && Catch::Contains("tokenizer.kind char") && Catch::Contains("ids"));
  CHECK_THROWS_WITH(rl::check_same_vocabulary(run, "tokenizer.kind char", other, "/teachers/t2"),
                    Catch::Contains("/teachers/t2") && Catch::Contains("\"d\"") && Catch::Contains("\"c\""));
  CHECK_NOTHROW(rl::check_same_vocabulary(run, "tokenizer.kind char", data::CharTokenizer("abc"), "t3"));
  // End to end: a teacher of a byte tokenizer under a run of a char one.
  const std::string dir = testing::fresh_temp_dir("distill_vocab");
  save_fresh_model(dir + "/student", 1);
  {
    rl::RunConfig c = rl::parse_run_config(kConfig, "test config", {{"tokenizer.kind", "byte"}});
    apps::RunObjects byte_run = apps::build_run(c);
    model::save_model(dir + "/byte_teacher", *byte_run.model, byte_run.tokenizer.get());
  }
  rl::RunConfig c =
      rl::parse_run_config(kConfig, "test config",
                           {{"train.init_from", dir + "/student"}, {"teacher.path", dir + "/byte_teacher"}});
  CHECK_THROWS_WITH(apps::build_run(c), Catch::Contains("teacher.path") && Catch::Contains("byte_teacher"));
  fs::remove_all(dir);
}

TEST_CASE("distillation: a run with a teacher resumes bit for bit", "[apps][distillation][resume]") {
  const std::string dir = testing::fresh_temp_dir("distill_resume");
  save_fresh_model(dir + "/teacher", 2);
  io::write_file_atomic(dir + "/run.yaml", kConfig);
  const std::string teacher = "teacher.path=" + dir + "/teacher";
  REQUIRE(
      call_command({"train", dir + "/run.yaml", teacher, "train.steps=4", "train.out_dir=" + dir + "/full"},
                   apps::run_train) == 0);
  REQUIRE(
      call_command({"train", dir + "/run.yaml", teacher, "train.steps=2", "train.out_dir=" + dir + "/half"},
                   apps::run_train) == 0);
  REQUIRE(call_command({"train", "--resume", dir + "/half", "train.steps=4"}, apps::run_train) == 0);
  CHECK(io::read_file(dir + "/full/checkpoints/step-000004/model.safetensors") ==
        io::read_file(dir + "/half/checkpoints/step-000004/model.safetensors"));
  // The samples carry the teacher's view of each token.
  std::istringstream samples(io::read_file(dir + "/full/samples.jsonl"));
  std::string line;
  REQUIRE(std::getline(samples, line));
  const nlohmann::json first = nlohmann::json::parse(line);
  CHECK(first["teacher_logprobs"].size() == first["tokens"].size());
  CHECK(first["teacher_argmax"].size() == first["tokens"].size());
  CHECK(first["token_rewards"].size() == first["tokens"].size());
  check_teacher_view(dir, dir + "/full");
  fs::remove_all(dir);
}
