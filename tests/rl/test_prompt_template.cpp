// prompt.template and conversational datasets: the prompt text production builds (rl::prompt_format_for_run
// -> data::load_problems / ProblemSource), plain prompts unchanged without a template, errors named.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/tasks/registry.h"
#include "rl/problem_source.h"
#include "rl/prompt_template.h"
#include "rl/run_config.h"

using namespace gtpo::rl;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const char* kChatMl =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("gtpo_test_prompt_" + std::to_string(::getpid()) + "_" + name)) {
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& file, const std::string& text) const {
    std::ofstream(path / file, std::ios::binary) << text;
    return (path / file).string();
  }
};

const std::string kConversational =
    R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}], "answer": "4"})"
    "\n"
    R"({"prompt": [{"role": "user", "content": "3+3?"}], "answer": 6})"
    "\n"
    R"({"messages": [{"role": "user", "content": "5+5?"}, {"role": "assistant", "content": "It is 10."}], "answer": "10"})"
    "\n";

RunConfig config_with(const std::string& yaml) {
  return parse_run_config(
      "model: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, max_position_embeddings: 64}\n" + yaml,
      "test.yaml");
}

}  // namespace

TEST_CASE("conversational rows render with prompt.template and the generation prompt", "[prompt]") {
  TempDir dir("conv");
  const std::string tmpl = dir.write("chatml.jinja", kChatMl);
  const std::string data = dir.write("data.jsonl", kConversational + R"({"prompt": "plain 1+1?", "answer": 2})" "\n");
  RunConfig c = config_with("prompt: {template: " + tmpl + "}\n");
  CHECK(c.prompt.template_path_or_pattern == tmpl);
  const ProblemSource source = ProblemSource::from_files(data, data, prompt_format_for_run(c));
  CHECK(source.train(0).prompt ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(source.train(0).answer == "4");
  CHECK(source.train(1).prompt == "<|im_start|>user\n3+3?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(source.train(1).answer == "6");
  // A final assistant turn is the reference solution, not part of the prompt.
  CHECK(source.train(2).prompt == "<|im_start|>user\n5+5?<|im_end|>\n<|im_start|>assistant\n");
  CHECK(source.train(2).reference_solution == "It is 10.");
  // With prompt.template set, a plain prompt is one user turn.
  CHECK(source.train(3).prompt == "<|im_start|>user\nplain 1+1?<|im_end|>\n<|im_start|>assistant\n");
  // The resolved config prints the key back.
  CHECK_THAT(resolved_config_yaml(c), Contains("prompt:\n  template: "));
}

TEST_CASE("without a template plain prompts stay as they are and conversations are errors", "[prompt]") {
  TempDir dir("plain");
  const std::string plain = dir.write("plain.jsonl", R"({"prompt": "What is 1+1?\n", "answer": 2})" "\n"
                                                     R"({"question": "Q?", "answer": "so #### 7"})" "\n");
  const RunConfig c = config_with("");
  CHECK(c.prompt.template_path_or_pattern.empty());
  const ProblemSource source = ProblemSource::from_files(plain, plain, prompt_format_for_run(c));
  CHECK(source.train(0).prompt == "What is 1+1?\n");
  CHECK(source.train(1).prompt == "Q?\n");
  const std::string conv = dir.write("conv.jsonl", R"({"prompt": "fine", "answer": 1})" "\n" + kConversational);
  CHECK_THROWS_WITH(ProblemSource::from_files(conv, conv, prompt_format_for_run(c)),
                    Contains(conv + ":2: field 'messages': a conversational row needs a chat template: set prompt.template"));
}

TEST_CASE("a tokenizer's chat template renders conversations but leaves plain prompts alone", "[prompt]") {
  TempDir dir("tok");
  nlohmann::json config = {{"chat_template", std::string("{{ bos_token }}") + kChatMl + "{{ eos_token }}"},
                           {"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                           {"eos_token", "</s>"}};
  dir.write("tokenizer_config.json", config.dump());
  const std::string tokenizer = dir.write("tokenizer.json", "{}");
  const std::string data = dir.write("data.jsonl", R"({"prompt": [{"role": "user", "content": "hi"}], "answer": 1})" "\n"
                                                   R"({"prompt": "plain", "answer": 1})" "\n");
  RunConfig c = config_with("tokenizer: {kind: file, file: " + tokenizer + "}\n");
  CHECK(tokenizer_dir_of(c) == dir.path.string());
  const ProblemSource source = ProblemSource::from_files(data, data, prompt_format_for_run(c));
  CHECK(source.train(0).prompt == "<s><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n</s>");
  CHECK(source.train(1).prompt == "plain");
  // chat_template.jinja beside the tokenizer wins over tokenizer_config.json's.
  dir.write("chat_template.jinja", "J:{{ messages[0].content }}");
  CHECK(ProblemSource::from_files(data, data, prompt_format_for_run(c)).train(0).prompt == "J:hi");
}

TEST_CASE("a {prompt} pattern formats plain and generated prompts", "[prompt]") {
  RunConfig c = config_with("prompt: {template: \"Q: {prompt}\\nA:\"}\n");
  const gtpo::data::chat::PromptFormat format = prompt_format_for_run(c);
  CHECK(format.plain("1+1") == "Q: 1+1\nA:");
  const ProblemSource plain = ProblemSource::from_task(gtpo::data::make_task("arith"), 3);
  const ProblemSource patterned = ProblemSource::from_task(gtpo::data::make_task("arith"), 3, format);
  CHECK(patterned.train(5).prompt == "Q: " + plain.train(5).prompt + "\nA:");
  CHECK(patterned.train(5).answer == plain.train(5).answer);
  CHECK_THAT(patterned.alphabet(), Contains("Q"));
}

TEST_CASE("prompt.template errors name the key, the file and the line", "[prompt]") {
  TempDir dir("errors");
  CHECK_THROWS_WITH(prompt_format("/no/such/template.jinja", ""),
                    Contains("prompt.template: '/no/such/template.jinja' is neither a readable Jinja chat template file"));
  const std::string bad = dir.write("bad.jinja", "ok\n{% for m in messages %}\n{{ m.role }}");
  CHECK_THROWS_WITH(prompt_format(bad, ""), Contains(bad + ":3: syntax error"));
  const std::string raising = dir.write("raise.jinja", "{{ raise_exception('no system role') }}");
  const std::string data = dir.write("d.jsonl", R"({"prompt": [{"role": "user", "content": "x"}], "answer": 1})" "\n");
  CHECK_THROWS_WITH(ProblemSource::from_files(data, data, prompt_format(raising, "")),
                    Contains(data + ":1: rendering the conversation with " + raising + ": " + raising +
                             ":1: raise_exception: no system role"));
  const std::string plain_rows = dir.write("p.jsonl", R"({"prompt": "fine", "answer": 1})" "\n");
  CHECK_THROWS_WITH(ProblemSource::from_files(plain_rows, plain_rows, prompt_format(raising, "")),
                    Contains(plain_rows + ":1: a plain prompt: rendering the conversation with " + raising));
  const std::string bad_rows = dir.write("rows.jsonl", R"({"messages": [{"content": "x"}], "answer": 1})" "\n");
  CHECK_THROWS_WITH(ProblemSource::from_files(bad_rows, bad_rows, prompt_format(dir.write("t.jinja", kChatMl), "")),
                    Contains(bad_rows + ":1: field 'messages': message 0 needs a string 'role'"));
}

TEST_CASE("conversational rows keep the file's key order: tool-call arguments render as written",
          "[prompt]") {
  TempDir dir("key_order");
  // Renders each message's keys and its tool calls' arguments in iteration order, as a template sees them.
  const std::string tmpl = dir.write(
      "args.jinja",
      "{% for message in messages %}{{ message['role'] }}:{% for call in message.get('tool_calls', []) %}"
      "{{ call['function']['arguments'] | tojson }}{% for k, v in call['function']['arguments'].items() "
      "%}[{{ k }}]"
      "{% endfor %}{% endfor %}{{ message['content'] }};{% endfor %}");
  const std::string data = dir.write(
      "data.jsonl",
      R"({"messages": [{"role": "user", "content": "weather?"}, {"role": "assistant", "content": "", )"
      R"("tool_calls": [{"type": "function", "function": {"name": "get", "arguments": {"zone": "CET", "city": "Paris", "days": 2}}}]}, )"
      R"({"role": "tool", "content": "sunny"}], "answer": "sunny"})"
      "\n");
  RunConfig c = config_with("prompt: {template: " + tmpl + "}\n");
  const ProblemSource source = ProblemSource::from_files(data, data, prompt_format_for_run(c));
  // jinja2 (and transformers) see the arguments as the file has them: zone, city, days, not sorted.
  CHECK_THAT(source.train(0).prompt,
             Contains(R"(assistant:{"zone": "CET", "city": "Paris", "days": 2}[zone][city][days];)"));
}
