// Task generators: registry, determinism, disjoint splits, and self-consistent reference solutions.
#include <cstdio>
#include <map>
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "data/tasks/arith.h"
#include "data/tasks/registry.h"
#include "data/verify/answer.h"
#include "data/verify/expression.h"
#include "runtime/error.h"

using namespace gtpo::data;
using Catch::Matchers::Contains;

namespace {

struct Config {
  std::string task;
  TaskOptions options;
};

// Every task at every difficulty (arith with and without scratchpad).
std::vector<Config> all_configs() {
  std::vector<Config> out;
  for (int d = 1; d <= 9; ++d) {
    out.push_back({"arith", {{"difficulty", std::to_string(d)}}});
    out.push_back({"arith", {{"difficulty", std::to_string(d)}, {"scratchpad", "false"}}});
  }
  for (int d = 1; d <= 4; ++d) out.push_back({"countdown", {{"difficulty", std::to_string(d)}}});
  for (int d = 1; d <= 8; ++d) out.push_back({"chain", {{"difficulty", std::to_string(d)}}});
  out.push_back({"chain", {{"min_steps", "8"}, {"max_steps", "30"}, {"ops", "+-"}}});
  out.push_back({"chain", {{"min_steps", "1"}, {"max_steps", "32"}}});
  out.push_back({"chain", {{"min_steps", "8"}, {"max_steps", "26"}, {"ops", "+-"}, {"labels", "true"}}});
  out.push_back({"progression", {}});
  out.push_back({"progression", {{"min_steps", "1"}, {"max_steps", "3"}}});
  return out;
}

std::string describe(const Config& c) {
  std::string s = c.task;
  for (const auto& [k, v] : c.options.values()) s += " " + k + "=" + v;
  return s;
}

// The scratchpad line(s) before "####", split into space-separated steps.
std::vector<std::string> steps_of(const std::string& solution) {
  std::vector<std::string> steps;
  const auto marker = solution.rfind("####");
  std::string body = solution.substr(0, marker);
  std::string current;
  for (char c : body) {
    if (c == ' ' || c == '\n') {
      if (!current.empty()) steps.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) steps.push_back(current);
  return steps;
}

}  // namespace

TEST_CASE("make_task: known names and clear errors", "[tasks]") {
  CHECK(task_names() == std::vector<std::string>{"arith", "chain", "countdown", "progression"});
  for (const auto& name : task_names()) {
    const auto task = make_task(name);
    CHECK(task->name() == name);
  }
  CHECK_THROWS_WITH(make_task("nope"), Contains("unknown task 'nope'") && Contains("arith, chain, countdown, progression"));
  CHECK_THROWS_WITH(make_task("arith", {{"digits", "3"}}),
                    Contains("unknown option 'digits'") && Contains("difficulty, ops, scratchpad, test_fraction"));
  CHECK_THROWS_WITH(make_task("arith", {{"difficulty", "x"}}),
                    Contains("task arith: option 'difficulty': expected integer in [1, 9], got 'x'"));
  CHECK_THROWS_WITH(make_task("arith", {{"difficulty", "10"}}), Contains("[1, 9]"));
  CHECK_THROWS_WITH(make_task("arith", {{"difficulty", "2x"}}), Contains("got '2x'"));
  CHECK_THROWS_WITH(make_task("arith", {{"ops", "+/"}}), Contains("option 'ops' may only contain"));
  CHECK_THROWS_WITH(make_task("arith", {{"ops", ""}}), Contains("option 'ops'"));
  CHECK_THROWS_WITH(make_task("arith", {{"scratchpad", "maybe"}}), Contains("expected true or false"));
  CHECK_THROWS_WITH(make_task("countdown", {{"difficulty", "5"}}), Contains("[1, 4]"));
  CHECK_THROWS_WITH(make_task("chain", {{"test_fraction", "1.5"}}), Contains("option 'test_fraction'"));
  CHECK_THROWS_WITH(make_task("chain", {{"steps", "3"}}),
                    Contains("valid options: difficulty, labels, max_steps, min_steps, ops, test_fraction"));
  CHECK_THROWS_WITH(make_task("chain", {{"labels", "true"}, {"max_steps", "27"}}), Contains("at most 26 steps"));
  CHECK_THROWS_WITH(make_task("chain", {{"ops", "+"}}), Contains("must include both + and -"));
  CHECK_THROWS_WITH(make_task("chain", {{"ops", "+-x"}}), Contains("may only contain + - * /"));
  CHECK_THROWS_WITH(make_task("chain", {{"min_steps", "9"}, {"max_steps", "4"}}),
                    Contains("'min_steps' (9) must not exceed 'max_steps' (4)"));
  CHECK_THROWS_WITH(make_task("chain", {{"max_steps", "33"}}), Contains("[1, 32]"));
  CHECK_THROWS_WITH(make_task("chain", {{"difficulty", "3"}, {"min_steps", "4"}}), Contains("not both"));
  CHECK_THROWS_AS(make_task("nope"), gtpo::Error);
}

TEST_CASE("TaskOptions::from_json turns scalars into option text", "[tasks]") {
  const auto options = TaskOptions::from_json({{"difficulty", 3}, {"scratchpad", false}, {"ops", "+-"}});
  const auto task = make_task("arith", options);
  const auto p = task->generate(1, Split::train, 0);
  CHECK(p.reference_solution.find('\n') == std::string::npos);  // no scratchpad
  CHECK_THROWS_WITH(TaskOptions::from_json({{"ops", {1, 2}}}), Contains("option 'ops' must be a scalar"));
  CHECK(TaskOptions::from_json(nullptr).values().empty());
}

TEST_CASE("generation is deterministic and seed-dependent", "[tasks]") {
  for (const auto& config : all_configs()) {
    INFO(describe(config));
    const auto a = make_task(config.task, config.options);
    const auto b = make_task(config.task, config.options);
    int differing = 0;
    for (uint64_t i = 0; i < 50; ++i) {
      for (Split split : {Split::train, Split::test}) {
        const Problem x = a->generate(7, split, i), y = b->generate(7, split, i);
        CHECK(x.prompt == y.prompt);
        CHECK(x.answer == y.answer);
        CHECK(x.reference_solution == y.reference_solution);
        CHECK(x.numbers == y.numbers);
        differing += a->generate(8, split, i).key != x.key;
      }
    }
    CHECK(differing > 10);  // even 1-digit arith has 300 problems
  }
}

TEST_CASE("pinned examples: the generators do not drift", "[tasks]") {
  // These exact strings guard against accidental changes to the RNG or the formats, which would
  // silently change every dataset and split. Update them only on purpose.
  const auto arith = make_task("arith", {{"difficulty", "2"}});
  const auto countdown = make_task("countdown");
  const auto chain = make_task("chain");
  const Problem a = arith->generate(1, Split::train, 0);
  const Problem c = countdown->generate(1, Split::train, 0);
  const Problem h = chain->generate(1, Split::train, 0);
  CHECK(a.prompt + a.reference_solution == "89*73=?\n89*3=267 89*70=6230 267+6230=6497\n#### 6497");
  CHECK(c.prompt + c.reference_solution == "use 8 6 9 to make 5\n8+6=14 14-9=5\n#### 8+6-9");
  CHECK(c.numbers == std::vector<int64_t>{8, 6, 9});
  CHECK(c.target == 5);
  CHECK(h.prompt + h.reference_solution == "start 9, -3, +5, -2\n9-3=6 6+5=11 11-2=9\n#### 9");
}

TEST_CASE("chain: min_steps/max_steps draw each problem's length, ops limits the operators", "[tasks]") {
  const auto task = make_task("chain", {{"min_steps", "8"}, {"max_steps", "30"}, {"ops", "+-"}});
  std::map<size_t, int> lengths;
  size_t shortest = SIZE_MAX, longest = 0;
  for (uint64_t i = 0; i < 2000; ++i) {
    const Problem p = task->generate(3, Split::train, i);
    const auto steps = steps_of(p.reference_solution);
    ++lengths[steps.size()];
    shortest = std::min(shortest, p.reference_solution.size());
    longest = std::max(longest, p.reference_solution.size());
    for (const auto& step : steps) CHECK(step.find_first_of("*/") == std::string::npos);
  }
  CHECK(lengths.size() == 23);  // every length from 8 to 30 occurs
  CHECK(lengths.begin()->first == 8);
  CHECK(lengths.rbegin()->first == 30);
  // The reasoning spans the study's range of response lengths (characters = char-tokenizer tokens).
  CHECK(shortest < 70);
  CHECK(longest > 230);
  CHECK(longest < 280);
  // A fixed length (difficulty, or min_steps == max_steps) draws no length, so old data is unchanged.
  const auto fixed = make_task("chain", {{"min_steps", "3"}, {"max_steps", "3"}});
  CHECK(fixed->generate(1, Split::train, 0).prompt == make_task("chain")->generate(1, Split::train, 0).prompt);
}

TEST_CASE("chain labels: each step applies the prompt's operation of its label to the last value", "[tasks]") {
  const auto task = make_task("chain", {{"min_steps", "8"}, {"max_steps", "26"}, {"ops", "+-"}, {"labels", "true"}});
  const Problem pinned = task->generate(1, Split::train, 0);
  CHECK(pinned.prompt.rfind("start ", 0) == 0);
  CHECK(pinned.prompt.find(", a") != std::string::npos);
  for (uint64_t i = 0; i < 300; ++i) {
    const Problem p = task->generate(5, Split::train, i);
    INFO(p.prompt << p.reference_solution);
    // The prompt: "start V, a+3, b-5, ...\n"; each entry is a label, an operator and a digit.
    std::vector<std::string> entries;
    std::string rest = p.prompt.substr(6, p.prompt.size() - 7), item;
    std::istringstream list(rest);
    while (std::getline(list, item, ',')) entries.push_back(item.substr(item.find_first_not_of(' ')));
    int64_t value = std::stoll(entries.front());
    const auto steps = steps_of(p.reference_solution);
    REQUIRE(steps.size() == entries.size() - 1);
    for (size_t k = 0; k < steps.size(); ++k) {
      const std::string& entry = entries[k + 1];
      REQUIRE(entry.size() == 3);
      CHECK(entry[0] == static_cast<char>('a' + k));
      CHECK(steps[k].rfind(entry + "=", 0) == 0);  // the step starts with its prompt entry
      value += (entry[1] == '+' ? 1 : -1) * (entry[2] - '0');
      CHECK(steps[k].substr(4) == std::to_string(value));
    }
    CHECK(p.answer == std::to_string(value));
  }
}

TEST_CASE("progression: k steps of the stride from the start, the first value past the bound", "[tasks]") {
  const auto task = make_task("progression", {{"min_steps", "6"}, {"max_steps", "20"}});
  std::map<size_t, int> lengths;
  for (uint64_t i = 0; i < 2000; ++i) {
    const Problem p = task->generate(2, Split::train, i);
    INFO(p.prompt << p.reference_solution);
    int64_t start = 0, stride = 0, bound = 0;
    REQUIRE(std::sscanf(p.prompt.c_str(), "from %lld by %lld past %lld", reinterpret_cast<long long*>(&start),
                        reinterpret_cast<long long*>(&stride), reinterpret_cast<long long*>(&bound)) == 3);
    const auto steps = steps_of(p.reference_solution);
    ++lengths[steps.size()];
    int64_t value = start;
    for (const auto& step : steps) {
      CHECK(step == std::to_string(value) + "+" + std::to_string(stride) + "=" + std::to_string(value + stride) +
                        (value + stride > bound ? ">" : "<") + std::to_string(bound));
      CHECK(value <= bound);  // a step is taken only while the value has not passed the bound
      value += stride;
    }
    CHECK(value > bound);
    CHECK(p.answer == std::to_string(value));
  }
  CHECK(lengths.size() == 15);
  CHECK(lengths.begin()->first == 6);
  CHECK(lengths.rbegin()->first == 20);
  CHECK_THROWS_WITH(make_task("progression", {{"min_steps", "9"}, {"max_steps", "4"}}), Contains("must not exceed"));
  CHECK_THROWS_WITH(make_task("progression", {{"ops", "+"}}), Contains("valid options: max_steps, min_steps, test_fraction"));
}

TEST_CASE("train and test splits are disjoint", "[tasks]") {
  for (const auto& config : all_configs()) {
    INFO(describe(config));
    const auto task = make_task(config.task, config.options);
    std::set<std::string> train, test;
    for (uint64_t seed = 0; seed < 3; ++seed) {
      for (uint64_t i = 0; i < 1000; ++i) {
        const Problem p = task->generate(seed, Split::train, i);
        CHECK(task->split_of_key(p.key) == Split::train);
        train.insert(p.key);
      }
      for (uint64_t i = 0; i < 300; ++i) {
        const Problem p = task->generate(seed, Split::test, i);
        CHECK(task->split_of_key(p.key) == Split::test);
        test.insert(p.key);
      }
    }
    for (const auto& key : test) {
      INFO(key);
      CHECK(train.count(key) == 0);
    }
  }
}

TEST_CASE("the split hash gives about test_fraction of keys to test", "[tasks]") {
  const auto task = make_task("arith", {{"difficulty", "4"}, {"test_fraction", "0.25"}});
  int test = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) test += task->split_of_key("key" + std::to_string(i)) == Split::test;
  CHECK(test == Approx(0.25 * n).epsilon(0.05));
}

TEST_CASE("every reference solution verifies, is well formed and stays in the alphabet", "[tasks]") {
  for (const auto& config : all_configs()) {
    INFO(describe(config));
    const auto task = make_task(config.task, config.options);
    const std::string alphabet = task->alphabet();
    for (Split split : {Split::train, Split::test}) {
      for (uint64_t i = 0; i < 2000; ++i) {
        const Problem p = task->generate(11, split, i);
        INFO(p.prompt << p.reference_solution);
        const Verdict v = task->check(p, p.reference_solution);
        REQUIRE(v.correct);
        REQUIRE(v.well_formed);
        REQUIRE(p.task == config.task);
        REQUIRE(!p.prompt.empty());
        REQUIRE(p.prompt.back() == '\n');
        const std::string text = p.prompt + p.reference_solution;
        REQUIRE(text.find_first_not_of(alphabet) == std::string::npos);
        // The last line of the solution is exactly "#### ANSWER".
        REQUIRE(p.reference_solution.size() >= p.answer.size() + 5);
        REQUIRE(p.reference_solution.substr(p.reference_solution.size() - p.answer.size() - 5) ==
                "#### " + p.answer);
      }
    }
  }
}

TEST_CASE("every scratchpad step is a true equation", "[tasks]") {
  for (const auto& config : all_configs()) {
    INFO(describe(config));
    // Labelled chain steps name their operation and progression steps compare with a bound: their own tests.
    if (config.options.has("labels") || config.task == "progression") continue;
    const auto task = make_task(config.task, config.options);
    for (uint64_t i = 0; i < 500; ++i) {
      const Problem p = task->generate(3, Split::train, i);
      for (const auto& step : steps_of(p.reference_solution)) {
        if (step.find('(') != std::string::npos) continue;  // arith's "a-b=-(b-a)" rewrite
        if (step.rfind("start", 0) == 0) continue;
        INFO(step);
        const auto eq = step.find('=');
        REQUIRE(eq != std::string::npos);
        const Evaluation lhs = evaluate_expression(step.substr(0, eq));
        REQUIRE(lhs.value);
        REQUIRE(lhs.value->is_integer());
        CHECK(std::to_string(lhs.value->num) == step.substr(eq + 1));
      }
    }
  }
}

TEST_CASE("wrong answers are rejected", "[tasks]") {
  for (const auto& config : all_configs()) {
    INFO(describe(config));
    const auto task = make_task(config.task, config.options);
    for (uint64_t i = 0; i < 300; ++i) {
      const Problem p = task->generate(5, Split::test, i);
      INFO(p.prompt);
      CHECK_FALSE(task->verify(p, ""));
      CHECK_FALSE(task->verify(p, p.prompt));
      if (config.task == "countdown") {
        CHECK_FALSE(task->verify(p, "#### " + std::to_string(p.target)));  // a number, not an expression
        CHECK_FALSE(task->verify(p, "#### " + p.answer + "+1"));
        CHECK(task->verify(p, "#### " + p.answer + "=" + std::to_string(p.target)));
        CHECK_FALSE(task->verify(p, "#### " + p.answer + "=" + std::to_string(p.target + 1)));
      } else {
        const long long answer = std::stoll(p.answer);
        CHECK_FALSE(task->verify(p, "#### " + std::to_string(answer + 1)));
        CHECK_FALSE(task->verify(p, "#### " + std::to_string(answer - 1)));
        CHECK_FALSE(task->verify(p, p.answer));  // no marker
        CHECK(task->verify(p, "#### " + std::to_string(answer) + ".0"));
      }
    }
  }
}

TEST_CASE("arith scratchpad formats", "[tasks][arith]") {
  const ArithTask pad({{"difficulty", "3"}});
  CHECK(pad.solution(47, '+', 85) == "7+5=12 4+8+1=13\n#### 132");
  CHECK(pad.solution(123, '+', 9) == "3+9=12 2+0+1=3 1+0=1\n#### 132");
  CHECK(pad.solution(132, '-', 85) == "12-5=7 13-8-1=4 1-0-1=0\n#### 47");
  CHECK(pad.solution(85, '-', 132) == "85-132=-(132-85) 12-5=7 13-8-1=4 1-0-1=0\n#### -47");
  CHECK(pad.solution(5, '-', 5) == "5-5=0\n#### 0");
  CHECK(pad.solution(47, '*', 85) == "47*5=235 47*80=3760 235+3760=3995\n#### 3995");
  CHECK(pad.solution(47, '*', 0) == "47*0=0\n#### 0");
  CHECK(pad.solution(47, '*', 302) == "47*2=94 47*300=14100 94+14100=14194\n#### 14194");
  const ArithTask plain({{"scratchpad", "false"}});
  CHECK(plain.solution(47, '+', 85) == "#### 132");
  const auto p = make_task("arith", {{"ops", "*"}})->generate(0, Split::train, 0);
  CHECK(p.prompt.find('*') != std::string::npos);
  CHECK(p.prompt.substr(p.prompt.size() - 3) == "=?\n");
}

TEST_CASE("alphabets are sorted, unique and contain the newline", "[tasks]") {
  for (const auto& name : task_names()) {
    const std::string a = make_task(name)->alphabet();
    CHECK(a == sorted_unique_chars(a));
    CHECK(a.find('\n') != std::string::npos);
    CHECK(a.find('#') != std::string::npos);
  }
}

TEST_CASE("split_name", "[tasks]") {
  CHECK(std::string(split_name(Split::train)) == "train");
  CHECK(std::string(split_name(Split::test)) == "test");
}
