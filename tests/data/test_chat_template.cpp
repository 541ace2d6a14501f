// Chat templates (data/chat/): byte-identical renders against transformers' own Jinja machinery on the
// fixtures of scripts/reference/chat_templates.py, errors that name the template line, and the limits that
// keep hostile templates from hanging or crashing.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "data/chat/chat_template.h"
#include "data/chat/text_utils.h"
#include "data/tokenizer/tokenizer.h"
#include "runtime/error.h"

using namespace gtpo::data::chat;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using ojson = nlohmann::ordered_json;

namespace {

const std::string kFixtures = std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/chat_templates/";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<ojson> read_records(const std::string& path) {
  std::vector<ojson> out;
  std::istringstream lines(read_text(path));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) out.push_back(ojson::parse(line));
  return out;
}

// The fixture's input as the ChatInput apply_chat_template's variables correspond to.
ChatInput input_of(const ojson& in) {
  ChatInput chat;
  chat.messages = messages_from_json(in.at("messages"), "fixture");
  chat.add_generation_prompt = in.at("add_generation_prompt").get<bool>();
  if (in.contains("bos_token")) chat.bos_token = in["bos_token"].get<std::string>();
  if (in.contains("eos_token")) chat.eos_token = in["eos_token"].get<std::string>();
  if (in.contains("tools")) chat.tools = in["tools"];
  if (in.contains("extra")) chat.extra = in["extra"];
  return chat;
}

std::string error_of(const std::string& text, const std::string& label, const ChatInput& in = {},
                     const RenderLimits& limits = {}) {
  try {
    render_chat(text, label, in, limits);
  } catch (const gtpo::Error& e) {
    return e.what();
  }
  return "(no error)";
}

ChatInput one_user(const std::string& content = "hi") {
  ChatInput in;
  in.messages.push_back({"user", content, ojson::object()});
  return in;
}

}  // namespace

TEST_CASE("chat templates render byte-identical to transformers on every fixture", "[chat]") {
  const auto cases = read_records(kFixtures + "cases.jsonl");
  REQUIRE(cases.size() >= 200);
  std::map<std::string, Template> compiled;
  int renders = 0, errors = 0, mismatches = 0;
  std::set<std::string> templates;
  for (const ojson& c : cases) {
    const std::string name = c.at("template").get<std::string>();
    templates.insert(name);
    if (!compiled.count(name))
      compiled.emplace(name, Template(read_text(kFixtures + "templates/" + name + ".jinja"), name + ".jinja"));
    const Template& t = compiled.at(name);
    const ChatInput in = input_of(c.at("input"));
    const std::string what = name + " / " + c.at("conversation").get<std::string>() +
                             (in.add_generation_prompt ? " / generation prompt" : "");
    if (c.contains("expected")) {
      ++renders;
      std::string got;
      try {
        got = render_chat(t, in);
      } catch (const gtpo::Error& e) {
        got = std::string("(error) ") + e.what();
      }
      if (got != c["expected"].get<std::string>()) {
        ++mismatches;
        INFO(what);
        CHECK(got == c["expected"].get<std::string>());
      }
    } else {
      ++errors;
      INFO(what);
      const ojson& err = c.at("error");
      const std::string message = [&] {
        try {
          render_chat(t, in);
        } catch (const gtpo::Error& e) {
          return std::string(e.what());
        }
        return std::string("(no error)");
      }();
      CHECK_THAT(message, StartsWith(name + ".jinja:"));
      // raise_exception's own message comes through, as transformers' TemplateError carries it.
      if (err.at("type") == "TemplateError") CHECK_THAT(message, Contains(err.at("message").get<std::string>()));
    }
  }
  WARN("chat templates: " << templates.size() << " templates, " << renders << " renders compared, " << errors
                          << " error cases, " << mismatches << " mismatches");
  CHECK(templates.size() >= 12);
  CHECK(renders >= 200);
  CHECK(mismatches == 0);
}

TEST_CASE("chat template errors name the template line as jinja2 does", "[chat]") {
  for (const ojson& c : read_records(kFixtures + "errors.jsonl")) {
    const std::string name = c.at("name").get<std::string>();
    INFO(name);
    const ChatInput in = input_of(c.at("input"));
    const std::string text = c.at("template").get<std::string>();
    if (c.contains("unexpected_render")) {  // jinja2 defers unknown filters in untaken branches: so do we
      CHECK(render_chat(text, name, in) == c["unexpected_render"].get<std::string>());
      continue;
    }
    const ojson& err = c.at("error");
    const std::string message = error_of(text, name, in);
    const std::string type = err.at("type").get<std::string>();
    // jinja2 finds these lines by mapping Python frames of its generated code back to the template; for a
    // runtime error on a tag (set, break) that mapping is off, so only the template name is compared there.
    if (type == "SyntaxError" || type == "TemplateRuntimeError") {
      CHECK_THAT(message, StartsWith(name + ":"));
    } else {
      CHECK_THAT(message, StartsWith(name + ":" + std::to_string(err.at("line").get<int>()) + ": "));
    }
    if (type == "TemplateError") CHECK_THAT(message, Contains(err.at("message").get<std::string>()));
  }
}

TEST_CASE("chat template syntax and runtime errors say what was expected", "[chat]") {
  CHECK(error_of("{% for m in messages %}\n{{ m.role }}", "t.jinja") ==
        "t.jinja:2: syntax error: unexpected end of template: expected 'else' or 'endfor' to close the 'for' block "
        "opened on line 1");
  CHECK_THAT(error_of("a\n{{ messages | frobnicate }}", "t.jinja", one_user()),
             StartsWith("t.jinja:2: no filter named 'frobnicate'"));
  CHECK_THAT(error_of("\n\n{{ raise_exception('roles must alternate') }}", "tmpl", one_user()),
             Equals("tmpl:3: raise_exception: roles must alternate"));
  CHECK_THAT(error_of("{% include 'x' %}", "t"), Contains("tag 'include' is not supported"));
  CHECK_THAT(error_of("{{ 1 +* 2 }}", "t"), StartsWith("t:1: syntax error: unexpected '*', expected an expression"));
  CHECK_THAT(error_of("{% set ns = 3 %}\n{% set ns.x = 1 %}", "t"), StartsWith("t:2: cannot assign attribute 'x'"));
  CHECK_THAT(error_of("{{ nothing.attr }}", "t"), StartsWith("t:1: 'nothing' is undefined"));
  CHECK_THAT(error_of("{% if x %}{% endfor %}", "t"), Contains("unknown tag 'endfor'"));
}

TEST_CASE("chat template limits turn hostile templates into errors", "[chat]") {
  RenderLimits limits;
  limits.max_steps = 100000;
  CHECK_THAT(error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "t", {}, limits),
             Contains("steps"));
  CHECK_THAT(error_of("{{ range(1000000) | length }}", "t"), Contains("range too big"));
  CHECK_THAT(error_of("{{ 'x' * 100000000 }}", "t"), Contains("limit"));
  CHECK_THAT(error_of("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "t"), Contains("nested deeper"));
  CHECK_THAT(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}", "t"),
             Contains("nesting deeper"));
  std::string blocks, ends;
  for (int i = 0; i < 150; ++i) blocks += "{% if true %}", ends += "{% endif %}";
  CHECK_THAT(error_of(blocks + ends, "t"), Contains("deeper than 100 levels"));
  std::string deep_macro = "{% macro f(n) %}", close;
  for (int i = 0; i < 60; ++i) deep_macro += "{% if true %}", close += "{% endif %}";
  CHECK_THAT(error_of(deep_macro + "{{ f(n) }}" + close + "{% endmacro %}{{ f(1) }}", "t"),
             Contains("evaluation nested deeper than 1000"));
  std::string chain = "{{ x";
  for (int i = 0; i < 5000; ++i) chain += ".a";
  CHECK_THAT(error_of(chain + " }}", "t"), Contains("chained deeper"));
  std::string sum = "{{ 1";
  for (int i = 0; i < 5000; ++i) sum += " + 1";
  CHECK_THAT(error_of(sum + " }}", "t"), Contains("chained deeper"));
  CHECK_THAT(error_of("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}", "t"),
             Contains("nested deeper"));
  CHECK_THAT(error_of("{% set ns = namespace(s='xxxxxxxxxxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
                      "{% endfor %}", "t"),
             Contains("limit"));
  CHECK_THAT(error_of("{{ 9223372036854775807 + 1 }}", "t"), Contains("overflow"));
}

// Substring search over a 1 MB message (`in`, find, count, replace, split) and `in`, ==, slices and + on
// large lists, a million times over: each operation charges the bytes or items it touches against max_steps,
// so the render stops within its budget (20 M steps) with an error naming the limit, instead of running for
// hours (10^12 bytes compared) as it did when only statements and expressions counted.
TEST_CASE("chat template limits: string and list operations count their work against max_steps", "[chat]") {
  const ChatInput big = one_user(std::string(1 << 20, 'a'));
  const std::string loop = "{% for i in range(1000) %}{% for j in range(1000) %}";
  const std::string end = "{% endfor %}{% endfor %}";
  for (const std::string op :
       {"'b' in messages[0].content", "messages[0].content.find('b')", "messages[0].content.count('b')",
        "messages[0].content.replace('b', 'c') | length", "messages[0].content.split('b') | length",
        "messages[0].content[1:] | length", "messages[0].content == messages[0].content ~ ''",
        "messages[0].content | length"}) {
    INFO(op);
    CHECK_THAT(error_of(loop + "{% if " + op + " %}{% endif %}" + end, "t", big),
               Contains("t:1:") && Contains("RenderLimits::max_steps"));
  }
  const std::string list = "{% set l = range(100000) | list %}";
  for (const std::string op : {"-1 in l", "l == l", "l[1:] | length", "(l + l) | length"}) {
    INFO(op);
    CHECK_THAT(error_of(list + loop + "{% if " + op + " %}{% endif %}" + end, "t"),
               Contains("RenderLimits::max_steps"));
  }
  CHECK_THAT(error_of(loop + "{{ '' * 1000000000 }}" + end, "t"), Contains("RenderLimits::max_steps"));
  // A search that std::string::find does in |text| x |needle| steps (5 * 10^9 here; it ran for minutes, the
  // string budget allowing 512 of them) is linear: within the budget once, stopped by it in a loop.
  CHECK(render_chat(
            "{{ ('a' * 5000 ~ 'b') in messages[0].content }} {{ messages[0].content.find('a' * 1000) }}", "t",
            big) == "False 0");
  CHECK_THAT(
      error_of("{% set n = 'a' * 5000 ~ 'b' %}" + loop + "{% if n in messages[0].content %}{% endif %}" + end,
               "t", big),
      Contains("RenderLimits::max_steps"));
}

TEST_CASE("chat templates: find_text finds what std::string::find finds", "[chat]") {
  uint64_t state = 7;
  const auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int trial = 0; trial < 3000; ++trial) {
    std::string text, needle;
    for (uint64_t i = next() % 14; i > 0; --i) text += static_cast<char>('a' + next() % 2);
    for (uint64_t i = next() % 5; i > 0; --i) needle += static_cast<char>('a' + next() % 2);
    for (std::size_t from = 0; from <= text.size() + 1; ++from) {
      INFO(text << " / " << needle << " from " << from);
      CHECK(find_text(text, needle, from) == text.find(needle, from));
    }
  }
}

TEST_CASE("chat templates: strftime_now is pinned and conversations convert with named errors", "[chat]") {
  ChatInput in = one_user();
  CHECK(render_chat("{{ strftime_now('%d %b %Y %H:%M') }}", "t", in) == "26 Jul 2024 00:00");
  in.time_utc = 0;
  CHECK(render_chat("{{ strftime_now('%Y-%m-%d') }}", "t", in) == "1970-01-01");
  CHECK_THROWS_WITH(messages_from_json(ojson::parse(R"([{"content": "x"}])"), "rows.jsonl:3"),
                    Contains("rows.jsonl:3: message 0 needs a string 'role'"));
  CHECK_THROWS_WITH(messages_from_json(ojson::parse(R"([{"role": "user", "content": 5}])"), "w"),
                    Contains("'content' must be a string"));
  CHECK_THROWS_WITH(messages_from_json(ojson::parse(R"({"role": "user"})"), "w"), Contains("expected an array"));
  const auto messages = messages_from_json(ojson::parse(R"([{"role": "user", "content": null, "name": "bob"}])"), "w");
  in.messages = messages;
  CHECK(render_chat("{{ messages[0].content is none }} {{ messages[0].name }} {{ messages[0] | tojson }}", "t", in) ==
        "True bob {\"role\": \"user\", \"content\": null, \"name\": \"bob\"}");
}

TEST_CASE(
    "chat templates: filters count their work, numbers match jinja2 or raise, a non-UTF-8 file is refused",
    "[chat]") {
  const ChatInput in = one_user();
  // unique compares each item with those kept: 100,000 distinct items are 5e9 comparisons, over the limit.
  CHECK_THAT(error_of("{{ range(100000) | unique | list | length }}", "t", in), Contains("steps"));
  CHECK(render_chat("{{ [3, 1, 3, 2, 1] | unique | join(',') }}", "t", in) == "3,1,2");
  // int: jinja2 gives Python's int(), big integers included; beyond 64 bits that is an error here, never 0.
  CHECK_THAT(error_of("{{ 1e30 | int }}", "t", in), Contains("does not fit a 64-bit integer"));
  CHECK_THAT(error_of("{{ '99999999999999999999' | int }}", "t", in),
             Contains("does not fit a 64-bit integer"));
  CHECK_THAT(error_of("{{ (1e308 * 10) | int }}", "t", in), Contains("infinity"));
  CHECK(
      render_chat("{{ 'nan' | int }}|{{ ' 12 ' | int }}|{{ 3.7 | int }}|{{ 'x' | int(5) }}|{{ '1e3' | int }}",
                  "t", in) == "0|12|3|5|1000");
  // **: Python's results, or its errors (a complex result, 0 to a negative power, overflow), never nan/inf.
  CHECK_THAT(error_of("{{ (-1) ** 0.5 }}", "t", in), Contains("complex"));
  CHECK_THAT(error_of("{{ 0 ** -1 }}", "t", in), Contains("negative power"));
  CHECK_THAT(error_of("{{ 10.0 ** 400 }}", "t", in), Contains("out of range"));
  CHECK_THAT(error_of("{{ 2 ** 63 }}", "t", in), Contains("overflow"));
  CHECK(render_chat(
            "{{ (-1) ** 3 }}|{{ (-2) ** 3 }}|{{ 2 ** 62 }}|{{ 2 ** -1 }}|{{ 1 ** 9223372036854775807 }}", "t",
            in) == "-1|-8|4611686018427387904|0.5|1");
  // transformers reads chat_template.jinja as UTF-8 and fails on other bytes; so does gtpo, naming the file.
  const std::string dir = (std::filesystem::temp_directory_path() / "gtpo_chat_utf8").string();
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(std::string(GTPO_SOURCE_DIR) + "/tests/fixtures/tokenizers/gpt2/tokenizer.json",
                             dir + "/tokenizer.json", std::filesystem::copy_options::overwrite_existing);
  std::ofstream(dir + "/chat_template.jinja") << "\xff\xfe{{ messages[0]['content'] }}";
  CHECK_THROWS_WITH(gtpo::data::load_tokenizer(dir),
                    Contains("chat_template.jinja") && Contains("not valid UTF-8"));
  std::filesystem::remove_all(dir);
}
