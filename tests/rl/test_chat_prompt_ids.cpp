// Rendered chat prompts reach the model as the ids transformers gives: the fixture
// tests/fixtures/hf_chat_qwen2 (scripts/reference/hf_chat_model.py) holds what apply_chat_template(
// add_generation_prompt=True) renders and tokenizes for GSM8K-format questions and a few conversations; the
// production path (rl::prompt_format -> data::load_problems -> data::encode_prompt) must give the same text
// and ids. Plain task text stays text-only.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "data/dataset.h"
#include "data/tasks/registry.h"
#include "data/prompt_tokens.h"
#include "data/tokenizer/tokenizer.h"
#include "rl/problem_source.h"
#include "rl/prompt_template.h"

using namespace gtpo;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kFixture = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/hf_chat_qwen2";

nlohmann::json expected_cases() {
  std::ifstream in(kFixture + "/expected.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in)["cases"];
}

}  // namespace

TEST_CASE("chat prompts: conversational rows give apply_chat_template's text and ids", "[prompt][chat]") {
  const auto tokenizer = data::load_tokenizer(kFixture);
  const nlohmann::json cases = expected_cases();
  REQUIRE(cases.size() >= 18);
  const fs::path rows = fs::temp_directory_path() / ("gtpo_chat_rows_" + std::to_string(::getpid()) + ".jsonl");
  {
    std::ofstream out(rows);
    for (const auto& c : cases) out << nlohmann::json{{"messages", c["messages"]}, {"answer", "0"}}.dump() << "\n";
  }
  const std::vector<data::Problem> problems = data::load_problems(rows.string(), rl::prompt_format("", kFixture));
  fs::remove(rows);
  REQUIRE(problems.size() == cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    CHECK(problems[i].rendered);
    CHECK(problems[i].prompt == cases[i]["text"].get<std::string>());
    CHECK(data::encode_prompt(*tokenizer, problems[i]) == cases[i]["ids"].get<std::vector<int32_t>>());
  }
}

TEST_CASE("chat prompts: prompt.template tokenizer renders GSM8K questions as one user turn", "[prompt][chat]") {
  const auto tokenizer = data::load_tokenizer(kFixture);
  const nlohmann::json cases = expected_cases();
  const std::string train = std::string(GTPO_SOURCE_DIR) + "/examples/gsm8k/train.jsonl";
  const rl::ProblemSource source =
      rl::ProblemSource::from_files(train, train, rl::prompt_format(rl::kTokenizerTemplate, kFixture));
  // The fixture's first cases are examples/gsm8k/train.jsonl's questions, in order.
  for (uint64_t i = 0; i < 16; ++i) {
    INFO("row " << i);
    const data::Problem p = source.train(i);
    REQUIRE(cases[i]["messages"].size() == 1);
    CHECK(p.prompt == cases[i]["text"].get<std::string>());
    CHECK(data::encode_prompt(*tokenizer, p) == cases[i]["ids"].get<std::vector<int32_t>>());
    CHECK(!p.answer.empty());
  }
}

TEST_CASE("chat prompts: plain task text is encoded text-only, a rendered prompt matches added tokens", "[prompt][chat]") {
  const auto tokenizer = data::load_tokenizer(kFixture);
  const int32_t im_start = tokenizer->token_id("<|im_start|>");
  REQUIRE(im_start >= 0);
  data::Problem p;
  p.prompt = "<|im_start|>user\n1+1?\n";
  const std::vector<int32_t> plain = data::encode_prompt(*tokenizer, p);
  CHECK(std::find(plain.begin(), plain.end(), im_start) == plain.end());
  CHECK(plain == tokenizer->encode(p.prompt));
  p.rendered = true;
  const std::vector<int32_t> rendered = data::encode_prompt(*tokenizer, p);
  CHECK(rendered.front() == im_start);
  CHECK(rendered == tokenizer->encode_hf(p.prompt, false));
}

TEST_CASE("chat prompts: prompt.template tokenizer without a chat template is an error naming the key", "[prompt][chat]") {
  CHECK_THROWS_WITH(rl::prompt_format(rl::kTokenizerTemplate, ""),
                    Contains("prompt.template") && Contains("char or byte"));
  const std::string no_template = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/hf_models/gpt2";
  CHECK_THROWS_WITH(rl::prompt_format(rl::kTokenizerTemplate, no_template),
                    Contains("prompt.template") && Contains(no_template) && Contains("chat_template"));
}

TEST_CASE("chat prompts: a chat_template.jinja beside tokenizer.json wins over tokenizer_config.json", "[prompt][chat]") {
  const fs::path dir = fs::temp_directory_path() / ("gtpo_chat_jinja_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(kFixture + "/tokenizer.json", dir / "tokenizer.json");
  fs::copy_file(kFixture + "/tokenizer_config.json", dir / "tokenizer_config.json");
  std::ofstream(dir / "chat_template.jinja") << "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
                                                "{% if add_generation_prompt %}[assistant] {% endif %}";
  const auto tokenizer = data::load_tokenizer(dir.string());
  CHECK_THAT(tokenizer->chat_template(), Contains("[assistant]"));
  CHECK(tokenizer->config().chat_template_label == (dir / "chat_template.jinja").string());
  const data::Problem p = rl::ProblemSource::from_task(data::make_task("arith", {}), 0,
                                                       rl::prompt_format(rl::kTokenizerTemplate, dir.string()))
                              .train(0);
  CHECK(p.rendered);
  CHECK(p.prompt.rfind("[user] ", 0) == 0);
  CHECK(p.prompt.size() > 12);
  CHECK(p.prompt.substr(p.prompt.size() - 12) == "[assistant] ");
  fs::remove_all(dir);
}
