// JSONL reading, field helpers and JSONL datasets (plain and GSM8K).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "data/dataset.h"
#include "data/jsonl.h"
#include "data/verify/answer.h"

using namespace gtpo::data;
using Catch::Matchers::Contains;

namespace {

// A file under the system temp directory, removed at the end of the test.
struct TempFile {
  std::filesystem::path path;
  explicit TempFile(const std::string& name, const std::string& text)
      : path(std::filesystem::temp_directory_path() / ("gtpo_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::ofstream(path, std::ios::binary) << text;
  }
  ~TempFile() { std::filesystem::remove(path); }
  std::string str() const { return path.string(); }
};

}  // namespace

TEST_CASE("parse_jsonl keeps line numbers and skips blank lines", "[jsonl]") {
  const auto lines = parse_jsonl("{\"a\": 1}\n\n   \n{\"a\": 2}\r\n{\"a\": 3}", "mem");
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].line == 1);
  CHECK(lines[1].line == 4);
  CHECK(lines[2].line == 5);
  CHECK(lines[2].source == "mem");
  CHECK(lines[1].value["a"] == 2);
  CHECK(parse_jsonl("", "mem").empty());
  CHECK(parse_jsonl("\n\n", "mem").empty());
}

TEST_CASE("parse_jsonl errors name the source and line", "[jsonl]") {
  CHECK_THROWS_WITH(parse_jsonl("{\"a\": 1}\n{\"a\": }\n", "data.jsonl"), Contains("data.jsonl:2: invalid JSON"));
  CHECK_THROWS_WITH(parse_jsonl("\n\n[1, 2]\n", "data.jsonl"),
                    Contains("data.jsonl:3: expected a JSON object, got array"));
  CHECK_THROWS_WITH(parse_jsonl("42", "x"), Contains("x:1: expected a JSON object, got integer"));
  CHECK_THROWS_WITH(parse_jsonl("{\"a\": 1} {\"b\": 2}", "x"), Contains("x:1: invalid JSON"));
  CHECK_THROWS_AS(parse_jsonl("{", "x"), gtpo::Error);
}

TEST_CASE("parse_jsonl: numbers beyond double's range are errors naming the source and line", "[jsonl]") {
  // nlohmann throws out_of_range (not parse_error) for these; once an "internal error" without file or line.
  for (const std::string& bad : {std::string("1e999"), std::string("-1e999"), "1" + std::string(400, '0') + ".5"}) {
    INFO(bad);
    CHECK_THROWS_WITH(parse_jsonl("{\"a\": 1}\n{\"answer\": " + bad + "}\n", "data.jsonl"),
                      Contains("data.jsonl:2: invalid JSON: number overflow parsing") && !Contains("json.exception"));
  }
  const TempFile file("overflow.jsonl", "\n{\"prompt\": \"p\", \"answer\": [1e999]}\n");
  CHECK_THROWS_WITH(read_jsonl(file.str()), Contains(file.str() + ":2: invalid JSON: number overflow"));
  CHECK_THROWS_WITH(load_problems(file.str()), Contains(file.str() + ":2: invalid JSON: number overflow"));
  // The largest finite double and the integers up to 2^64-1 still parse.
  CHECK(parse_jsonl("{\"a\": 1.7976931348623157e308, \"b\": 18446744073709551615}", "x").size() == 1);
}

TEST_CASE("require_int: integers beyond int64 are an error, not a wrapped negative", "[jsonl]") {
  const auto lines = parse_jsonl("{\"a\": 9223372036854775807, \"b\": 9223372036854775808}", "f.jsonl");
  CHECK(require_int(lines.at(0), "a") == INT64_MAX);
  CHECK_THROWS_WITH(require_int(lines.at(0), "b"),
                    Contains("f.jsonl:1: field 'b' is 9223372036854775808, beyond the largest integer"));
}

TEST_CASE("read_jsonl reads files and reports missing ones", "[jsonl]") {
  const TempFile file("read.jsonl", "{\"prompt\": \"p\"}\n\n{oops\n");
  CHECK_THROWS_WITH(read_jsonl(file.str()), Contains(file.str() + ":3: invalid JSON"));
  CHECK_THROWS_WITH(read_jsonl("/nonexistent/nothing.jsonl"),
                    Contains("/nonexistent/nothing.jsonl': cannot open"));
}

TEST_CASE("required field helpers check presence and type", "[jsonl]") {
  const auto lines = parse_jsonl("\n{\"s\": \"x\", \"i\": 3, \"f\": 2.5, \"b\": true, \"a\": [1], \"n\": null}", "f.jsonl");
  const JsonLine& line = lines.at(0);
  CHECK(require_string(line, "s") == "x");
  CHECK(require_int(line, "i") == 3);
  CHECK(require_bool(line, "b"));
  CHECK(require_array(line, "a").size() == 1);
  CHECK(optional_string(line, "s") == "x");
  CHECK_FALSE(optional_string(line, "n").has_value());
  CHECK_FALSE(optional_string(line, "zzz").has_value());
  CHECK_THROWS_WITH(require_string(line, "missing"), Contains("f.jsonl:2: missing field 'missing'"));
  CHECK_THROWS_WITH(require_string(line, "i"), Contains("f.jsonl:2: field 'i' must be a string (got integer)"));
  CHECK_THROWS_WITH(require_int(line, "f"), Contains("field 'f' must be an integer (got number)"));
  CHECK_THROWS_WITH(require_bool(line, "s"), Contains("field 's' must be a boolean (got string)"));
  CHECK_THROWS_WITH(require_array(line, "s"), Contains("field 's' must be an array"));
  CHECK_THROWS_WITH(optional_string(line, "i"), Contains("field 'i' must be a string"));
}

TEST_CASE("plain prompt/answer datasets", "[jsonl][dataset]") {
  const TempFile file("plain.jsonl",
                      "{\"prompt\": \"2+2=?\\n\", \"answer\": \"4\"}\n"
                      "{\"prompt\": \"big\\n\", \"answer\": \"1,000\", \"solution\": \"lots\\n#### 1000\"}\n"
                      "\n"
                      "{\"prompt\": \"num\\n\", \"answer\": 42}\n"
                      "{\"prompt\": \"text\\n\", \"answer\": \" x = 3 \"}\n");
  const auto problems = load_problems(file.str());
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].prompt == "2+2=?\n");
  CHECK(problems[0].answer == "4");
  CHECK(problems[0].reference_solution == "#### 4");
  CHECK(problems[0].task == "jsonl");
  CHECK(problems[1].answer == "1000");
  CHECK(problems[1].reference_solution == "lots\n#### 1000");
  CHECK(problems[2].answer == "42");
  CHECK(problems[3].answer == "x = 3");
  for (const auto& p : problems) CHECK(check_final_answer(p.answer, p.reference_solution).correct);
  CHECK(check_final_answer(problems[1].answer, "#### 1,000").correct);
}

TEST_CASE("GSM8K datasets", "[jsonl][dataset]") {
  const TempFile file("gsm8k.jsonl",
                      "{\"question\": \"Natalia sold 48 clips in April and half as many in May. How many in total?\", "
                      "\"answer\": \"In May she sold 48/2 = <<48/2=24>>24 clips.\\nIn total 48+24 = <<48+24=72>>72 "
                      "clips.\\n#### 72\"}\n"
                      "{\"question\": \"Q2\", \"answer\": \"It costs $1,200.\\n#### 1,200\"}\n");
  const auto problems = load_problems(file.str());
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].prompt ==
        "Natalia sold 48 clips in April and half as many in May. How many in total?\n");
  CHECK(problems[0].answer == "72");
  CHECK(problems[0].reference_solution ==
        "In May she sold 48/2 = 24 clips.\nIn total 48+24 = 72 clips.\n#### 72");
  CHECK(problems[1].answer == "1200");
  CHECK(check_final_answer(problems[0].answer, "so #### 72").correct);
  CHECK(check_final_answer(problems[0].answer, problems[0].reference_solution).correct);
  CHECK(strip_calculator_annotations("a <<1+1=2>>2 b <<unterminated") == "a 2 b <<unterminated");
}

TEST_CASE("dataset errors name the file and line", "[jsonl][dataset]") {
  const std::pair<const char*, const char*> cases[] = {
      {"{\"question\": \"q\", \"answer\": \"no marker\"}", ":2: GSM8K field 'answer' has no '####'"},
      {"{\"question\": \"q\", \"answer\": \"x ####  \"}", ":2: GSM8K field 'answer' has nothing after '####'"},
      {"{\"question\": 3, \"answer\": \"#### 1\"}", ":2: field 'question' must be a string (got integer)"},
      {"{\"question\": \"q\"}", ":2: missing field 'answer'"},
      {"{\"prompt\": \"p\"}", ":2: missing field 'answer'"},
      {"{\"prompt\": \"p\", \"answer\": [1]}", ":2: field 'answer' must be a string or a number (got array)"},
      {"{\"prompt\": \"p\", \"answer\": \"  \"}", ":2: field 'answer' is empty"},
      {"{\"prompt\": \"\", \"answer\": \"1\"}", ":2: empty prompt"},
      {"{\"prompt\": \"p\", \"answer\": \"1\", \"solution\": 5}", ":2: field 'solution' must be a string"},
      {"{\"text\": \"p\"}", ":2: expected a 'prompt' field (or GSM8K's 'question')"},
      {"not json", ":2: invalid JSON"},
  };
  for (const auto& [line, message] : cases) {
    INFO(line);
    const TempFile file("bad.jsonl", std::string("{\"prompt\": \"ok\", \"answer\": \"1\"}\n") + line + "\n");
    CHECK_THROWS_WITH(load_problems(file.str()), Contains(file.str() + message));
  }
}

TEST_CASE("problem_to_json round-trips through load_problems", "[jsonl][dataset]") {
  Problem p;
  p.task = "countdown";
  p.prompt = "use 3 5 7 to make 22\n";
  p.answer = "3*5+7";
  p.reference_solution = "3*5=15 15+7=22\n#### 3*5+7";
  p.numbers = {3, 5, 7};
  p.target = 22;
  const auto j = problem_to_json(p);
  CHECK(j["numbers"] == nlohmann::json::array({3, 5, 7}));
  CHECK(j["target"] == 22);
  const auto back = problem_from_json(JsonLine{"x", 1, j, j.dump()});
  CHECK(back.prompt == p.prompt);
  CHECK(back.answer == p.answer);
  CHECK(back.reference_solution == p.reference_solution);
  // The row names its task: it comes back as countdown, with its numbers and target.
  CHECK(back.task == "countdown");
  CHECK(back.numbers == p.numbers);
  CHECK(back.target == p.target);
}

TEST_CASE("a dataset row keeps every column, and a row that names its task keeps its payload", "[jsonl][dataset]") {
  const TempFile file("columns.jsonl",
                      "{\"prompt\": \"2+2\\n\", \"answer\": 4, \"source\": \"book\", \"difficulty\": [1, 2]}\n"
                      "{\"question\": \"q\", \"answer\": \"so #### 5\", \"id\": 17}\n"
                      "{\"task\": \"countdown\", \"prompt\": \"use 2 3 to make 6\\n\", \"answer\": \"2*3\", "
                      "\"numbers\": [2, 3], \"target\": 6}\n"
                      "{\"task\": \"jsonl\", \"prompt\": \"p\\n\", \"answer\": \"1\"}\n");
  const auto problems = load_problems(file.str());
  REQUIRE(problems.size() == 4);
  const nlohmann::json first = nlohmann::json::parse(problems[0].row);
  CHECK(first["source"] == "book");
  CHECK(first["difficulty"] == nlohmann::json::array({1, 2}));
  CHECK(first["answer"] == 4);
  CHECK(problems[0].task == "jsonl");
  const nlohmann::json second = nlohmann::json::parse(problems[1].row);
  CHECK(second["id"] == 17);
  CHECK(second["answer"] == "so #### 5");  // the column as given, not the extracted answer
  CHECK(problems[1].answer == "5");
  CHECK(problems[2].task == "countdown");
  CHECK(problems[2].numbers == std::vector<int64_t>{2, 3});
  CHECK(problems[2].target == 6);
  CHECK(problems[3].task == "jsonl");

  const std::pair<const char*, const char*> cases[] = {
      {"{\"task\": \"sudoku\", \"prompt\": \"p\", \"answer\": \"1\"}", ":1: field 'task' names no task: 'sudoku'"},
      {"{\"task\": \"countdown\", \"prompt\": \"p\", \"answer\": \"1\", \"target\": 3}", ":1: missing field 'numbers'"},
      {"{\"task\": \"countdown\", \"prompt\": \"p\", \"answer\": \"1\", \"numbers\": [1.5], \"target\": 3}",
       ":1: field 'numbers' must hold integers"},
      {"{\"task\": \"countdown\", \"prompt\": \"p\", \"answer\": \"1\", \"numbers\": [1]}", ":1: missing field 'target'"},
  };
  for (const auto& [line, message] : cases) {
    INFO(line);
    const TempFile bad("bad_task.jsonl", std::string(line) + "\n");
    CHECK_THROWS_WITH(load_problems(bad.str()), Contains(bad.str() + message));
  }
}
