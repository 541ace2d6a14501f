// An RL run from a Hugging Face instruct directory through its chat template (configs/gsm8k-chat.yaml, as
// shipped, on the tiny Qwen2 fixture tests/fixtures/hf_chat_qwen2), and `gtpo tokenize --chat`, both
// against what transformers gave on the fixture (expected.json, scripts/reference/hf_chat_model.py).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/commands.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/utf8.h"
#include "model/checkpoint.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/child_process.h"
#include "tests/support/commands.h"
#include "tests/support/hf_reference.h"

using namespace gtpo;
using Catch::Contains;
using testing::call_command;
namespace fs = std::filesystem;

namespace {

const std::string kSource = GTPO_SOURCE_DIR;
const std::string kFixture = kSource + "/tests/fixtures/hf_chat_qwen2";

nlohmann::json expected() { return nlohmann::json::parse(io::read_file(kFixture + "/expected.json")); }

std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(io::read_file(path));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

// `gtpo train configs/gsm8k-chat.yaml` into RUN with SETTINGS, its relative paths made absolute.
int train_shipped_config(const std::string& run, const std::vector<std::string>& settings) {
  std::vector<std::string> args = {"train",
                                   kSource + "/configs/gsm8k-chat.yaml",
                                   "train.out_dir=" + run,
                                   "train.init_from=" + kFixture,
                                   "task.train_file=" + kSource + "/examples/gsm8k/train.jsonl",
                                   "task.test_file=" + kSource + "/examples/gsm8k/test.jsonl",
                                   "log.progress=false"};
  args.insert(args.end(), settings.begin(), settings.end());
  return call_command(args, apps::run_train);
}

}  // namespace

TEST_CASE("tokenize --chat renders and encodes conversations as apply_chat_template", "[apps][tokenize][chat]") {
  const std::string work = testing::fresh_temp_dir("tokenize_chat");
  const nlohmann::json cases = expected()["cases"];
  {
    std::ofstream in(work + "/in.jsonl");
    for (const auto& c : cases) in << nlohmann::json{{"messages", c["messages"]}}.dump() << "\n";
  }
  REQUIRE(call_command({"tokenize", "--tokenizer", kFixture, "--chat", "--add-generation-prompt", "--in",
                        work + "/in.jsonl", "--out", work + "/out.jsonl"},
                       apps::run_tokenize) == 0);
  const std::vector<nlohmann::json> out = read_lines(work + "/out.jsonl");
  REQUIRE(out.size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(out[i]["text"] == cases[i]["text"]);
    CHECK(out[i]["ids"] == cases[i]["ids"]);
    CHECK(out[i]["tokens"].size() == out[i]["ids"].size());
  }
  // Without the generation prompt the text ends with the last turn, as apply_chat_template's does.
  REQUIRE(call_command({"tokenize", "--tokenizer", kFixture, "--chat", "--in", work + "/in.jsonl", "--out",
                        work + "/plain.jsonl"},
                       apps::run_tokenize) == 0);
  const std::string first = read_lines(work + "/plain.jsonl")[0]["text"];
  CHECK(first + "<|im_start|>assistant\n" == cases[0]["text"].get<std::string>());
  fs::remove_all(work);
}

TEST_CASE("tokenize --chat: bad flags and tokenizers without a template are clear errors", "[apps][tokenize][chat]") {
  const std::string work = testing::fresh_temp_dir("tokenize_chat_errors");
  const std::string msgs = R"([{"role": "user", "content": "hi"}])";
  CHECK(call_command({"tokenize", "--tokenizer", kFixture, "--add-generation-prompt", "--text", "x"},
                     apps::run_tokenize) == 2);
  CHECK(call_command({"tokenize", "--tokenizer", kFixture, "--chat", "--decode", "--text", msgs}, apps::run_tokenize) == 2);
  CHECK(call_command({"tokenize", "--tokenizer", kFixture, "--chat", "--text", "not json"}, apps::run_tokenize) == 2);
  // gpt2's fixture tokenizer has no chat template: exit 1 (the message names the tokenizer; checked by hand
  // through stderr, the exit code here).
  CHECK(call_command({"tokenize", "--tokenizer", kSource + "/tests/fixtures/tokenizers/gpt2", "--chat", "--text", msgs},
                     apps::run_tokenize) == 1);
  // A message without a role names the line and field.
  io::write_file_atomic(work + "/bad.jsonl", R"({"messages": [{"content": "hi"}]})" "\n");
  CHECK(call_command({"tokenize", "--tokenizer", kFixture, "--chat", "--in", work + "/bad.jsonl", "--out",
                      work + "/o.jsonl"},
                     apps::run_tokenize) == 1);
  CHECK_FALSE(fs::exists(work + "/o.jsonl"));
  REQUIRE(call_command({"tokenize", "--tokenizer", kFixture, "--chat", "--text", msgs}, apps::run_tokenize) == 0);
  fs::remove_all(work);
}

TEST_CASE("configs: gsm8k-chat.yaml trains 2 RL steps from the Hugging Face fixture through its chat template",
          "[apps][configs][chat][hf-python]") {
  const std::string run = testing::fresh_temp_dir("gsm8k_chat") + "/run";
  REQUIRE(train_shipped_config(run, {"train.steps=2", "train.sample_every=1", "eval.num_problems=4",
                                     "rl.dynamic_sampling=false", "sft.steps=0", "task.shuffle=false"}) ==
          0);  // rows in file order: cases[problem]
  const std::vector<nlohmann::json> metrics = read_lines(run + "/metrics.jsonl");
  REQUIRE(metrics.size() == 2);
  // (no warm start and dynamic sampling off: a random model answers nothing right, so every group would be
  // dropped unlogged.)
  // The sampled prompts are the fixture's renders of the same questions (train rows in order).
  const nlohmann::json cases = expected()["cases"];
  const std::vector<nlohmann::json> samples = read_lines(run + "/samples.jsonl");
  REQUIRE_FALSE(samples.empty());
  for (const auto& s : samples) {
    const int64_t problem = s["problem"].get<int64_t>();
    REQUIRE(problem < 16);
    CHECK(s["prompt"] == cases[static_cast<size_t>(problem)]["text"]);
  }
  // The final checkpoint is a Hugging Face directory with the chat template and eos ids kept ...
  const std::string ckpt = run + "/checkpoints/step-000002";
  const model::LoadedModel loaded = model::load_model(ckpt);
  REQUIRE(loaded.tokenizer != nullptr);
  CHECK(loaded.tokenizer->chat_template() == data::load_tokenizer(kFixture)->chat_template());
  const nlohmann::json generation = nlohmann::json::parse(io::read_file(ckpt + "/generation_config.json"));
  CHECK(generation["eos_token_id"] == expected()["eos_token_ids"]);
  // ... that transformers loads: the same renders and ids, and gtpo's log-probs.
  const char* python = std::getenv("GTPO_HF_PYTHON");
  INFO("GTPO_HF_PYTHON is not set: this test runs transformers (scripts/test.sh sets it)");
  REQUIRE(python != nullptr);
  const std::string command = std::string(python) + " " + kSource + "/scripts/reference/hf_check_chat_dir.py " + ckpt +
                              " " + kFixture + "/expected.json";
  CHECK(std::system(command.c_str()) == 0);
  CHECK(testing::gtpo_vs_transformers(ckpt, run) < 1e-4);
  fs::remove_all(fs::path(run).parent_path());
}

TEST_CASE("configs: gsm8k-chat.yaml as shipped keeps groups from its first RL steps (its warm start works)",
          "[apps][configs][chat]") {
  const std::string run = testing::fresh_temp_dir("gsm8k_chat_shipped") + "/run";
  REQUIRE(train_shipped_config(run, {"train.steps=3"}) == 0);  // as shipped but 3 steps
  const std::vector<nlohmann::json> metrics = read_lines(run + "/metrics.jsonl");
  REQUIRE(metrics.size() == 3);
  double correct = 0;
  for (const nlohmann::json& m : metrics) {
    INFO("step " << m["step"]);
    CHECK(m["groups_kept"].get<int64_t>() > 0);  // without the warm start: 0 in every step
    correct += m["accuracy"].get<double>();
  }
  CHECK(correct > 0.0);
  fs::remove_all(fs::path(run).parent_path());
}

// A byte-level BPE model samples bytes that are not UTF-8 (a random one does in most completions): the
// shipped config with its example reward, without its warm start, trains 20 steps, and every request the reward reads is JSON
// whose completion is the decoded ids with U+FFFD for invalid bytes, whose token_ids are the exact ids and
// whose token_texts are each id decoded alone, invalid bytes as \xNN (docs/rewards.md). Run as a child:
// before, the JSON writer's exception ended the run with "internal error".
TEST_CASE(
    "configs: gsm8k-chat.yaml with its example reward trains 20 steps on completions that are not UTF-8",
    "[apps][configs][chat][rewards]") {
  const std::string dir = testing::fresh_temp_dir("gsm8k_chat_utf8");
  const std::string log = dir + "/requests.jsonl";
  io::write_file_atomic(dir + "/run.yaml",
                        io::read_file(kSource + "/configs/gsm8k-chat.yaml") +
                            "reward:\n  functions:\n    - {name: gsm8k, weight: 1.0, command: "
                            "\"tee -a " +
                            log + " | python3 " + kSource + "/examples/rewards/gsm8k_reward.py\"}\n");
  const testing::ShellResult r =
      testing::run_shell(testing::gtpo_binary() + " train " + dir + "/run.yaml train.out_dir=" + dir +
                         "/run train.init_from=" + kFixture + " task.train_file=" + kSource +
                         "/examples/gsm8k/train.jsonl task.test_file=" + kSource +
                         "/examples/gsm8k/test.jsonl log.progress=false sft.steps=0 train.steps=20");
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(read_lines(dir + "/run/metrics.jsonl").size() == 20);
  const auto tokenizer = data::load_tokenizer(kFixture);
  std::istringstream in(io::read_file(log));
  int64_t requests = 0, not_utf8 = 0, plain_joined = 0;
  for (std::string line; std::getline(in, line); ++requests) {
    const nlohmann::json j = nlohmann::json::parse(line);  // strict: valid UTF-8 throughout
    std::vector<int32_t> ids = j["token_ids"].get<std::vector<int32_t>>();
    CHECK(j["completion_tokens"] == j["token_ids"]);
    // token_texts: one per id, each token decoded alone with invalid bytes as \xNN (never U+FFFD); joined,
    // they are the completion wherever no token needed an escape.
    const std::vector<std::string> texts = j["token_texts"].get<std::vector<std::string>>();
    REQUIRE(texts.size() == ids.size());
    for (std::size_t k = 0; k < ids.size(); ++k) CHECK(texts[k] == tokenizer->token_text(ids[k]));
    if (!j["truncated"].get<bool>()) ids.pop_back();  // the end-of-sequence id ended it
    const std::string bytes = tokenizer->decode(ids);
    not_utf8 += data::utf8_valid(bytes) ? 0 : 1;
    CHECK(j["completion"] == data::utf8_replace_invalid(bytes));
    std::string joined;
    bool escaped = false;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const int32_t one[] = {ids[k]};
      escaped = escaped || texts[k] != tokenizer->decode(one);
      joined += texts[k];
    }
    if (!escaped) CHECK(joined == j["completion"]);
    plain_joined += escaped ? 0 : 1;
  }
  CHECK(plain_joined > 0);
  CHECK(requests >= 20 * 4 * 4);
  CHECK(not_utf8 > 0);
  WARN("gsm8k-chat with an external reward: " << requests << " requests, " << not_utf8
                                              << " completions not valid UTF-8, " << plain_joined
                                              << " whose token_texts join to the completion");
  fs::remove_all(dir);
}
