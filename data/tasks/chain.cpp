#include "data/tasks/chain.h"

#include <algorithm>
#include <vector>

#include "runtime/error.h"

namespace gtpo::data {

namespace {

constexpr int64_t kMaxValue = 999;

bool feasible(int64_t v, char op, int64_t x) {
  switch (op) {
    case '+': return v + x <= kMaxValue;
    case '-': return v - x >= 0;
    case '*': return v * x <= kMaxValue;
    default: return v % x == 0;  // '/': exact division only
  }
}

int64_t apply(int64_t v, char op, int64_t x) {
  switch (op) {
    case '+': return v + x;
    case '-': return v - x;
    case '*': return v * x;
    default: return v / x;
  }
}

}  // namespace

const std::vector<std::string>& ChainTask::option_names() {
  static const std::vector<std::string> names = {"difficulty", "labels", "max_steps", "min_steps", "ops", "test_fraction"};
  return names;
}

ChainTask::ChainTask(const TaskOptions& options)
    : Task(options.get_double("chain", "test_fraction", 0.1, 0.01, 0.99)),
      ops_(options.get_string("chain", "ops", "+-*/")),
      labels_(options.get_bool("chain", "labels", false)) {
  options.check_known("chain", option_names());
  const int by_difficulty = static_cast<int>(options.get_int("chain", "difficulty", 2, 1, 8)) + 1;
  GTPO_CHECK(!(options.has("difficulty") && (options.has("min_steps") || options.has("max_steps"))),
             "task chain: give either 'difficulty' or 'min_steps'/'max_steps', not both");
  min_steps_ = static_cast<int>(options.get_int("chain", "min_steps", by_difficulty, 1, 32));
  max_steps_ = static_cast<int>(options.get_int("chain", "max_steps", std::max(min_steps_, by_difficulty), 1, 32));
  GTPO_CHECK(min_steps_ <= max_steps_, "task chain: option 'min_steps' (", min_steps_,
             ") must not exceed 'max_steps' (", max_steps_, ")");
  GTPO_CHECK(!labels_ || max_steps_ <= 26, "task chain: with 'labels' (a to z) at most 26 steps (max_steps is ",
             max_steps_, ")");
  GTPO_CHECK(!ops_.empty(), "task chain: option 'ops' must name at least one of + - * /");
  for (char c : ops_) {
    GTPO_CHECK(c == '+' || c == '-' || c == '*' || c == '/',
               "task chain: option 'ops' may only contain + - * / (got '", ops_, "')");
  }
  // With both '+' and '-' every value in [0, 999] has a legal next step; without one of them a
  // chain can reach a dead end (0 with '-' alone, 999 with '+' and '*').
  GTPO_CHECK(ops_.find('+') != std::string::npos && ops_.find('-') != std::string::npos,
             "task chain: option 'ops' must include both + and - (got '", ops_, "')");
  std::string ordered;  // a fixed order, without duplicates, so the operator mix is defined by the set
  for (char c : std::string("+-*/")) {
    if (ops_.find(c) != std::string::npos) ordered += c;
  }
  ops_ = ordered;
}

std::string ChainTask::alphabet() const {
  return sorted_unique_chars(std::string("0123456789+-*/=#, start\n") + (labels_ ? "abcdefghijklmnopqrstuvwxyz" : ""));
}

std::optional<Problem> ChainTask::candidate(Rng& rng) const {
  int64_t value = rng.range(1, 20);
  // No draw when the length is fixed, so fixed-length chains stay as they were generated before.
  const int length = min_steps_ == max_steps_ ? min_steps_ : static_cast<int>(rng.range(min_steps_, max_steps_));
  std::string prompt = "start " + std::to_string(value);
  std::string steps;
  for (int i = 0; i < length; ++i) {
    // Pick the operator uniformly among those with at least one legal operand, then the operand
    // uniformly among the legal ones; choosing uniformly over (op, operand) pairs instead would
    // make exact division, which has few legal operands, very rare.
    std::vector<std::pair<char, std::vector<int64_t>>> choices;
    for (char op : ops_) {
      std::vector<int64_t> operands;
      for (int64_t x = (op == '*' || op == '/') ? 2 : 1; x <= 9; ++x) {
        if (feasible(value, op, x)) operands.push_back(x);
      }
      if (!operands.empty()) choices.emplace_back(op, std::move(operands));
    }
    const auto& [op, operands] = choices[rng.below(choices.size())];
    const int64_t x = operands[rng.below(operands.size())];
    const int64_t next = apply(value, op, x);
    if (!steps.empty()) steps += ' ';
    if (labels_) {
      // The step names its operation by label instead of restating the value: "b-5=5". The label makes the
      // lookup of the i-th operation in the prompt a unique match, which a small model learns far sooner
      // than counting along a list whose entries repeat.
      const std::string labelled = std::string(1, static_cast<char>('a' + i)) + op + std::to_string(x);
      prompt += ", " + labelled;
      steps += labelled + "=" + std::to_string(next);
    } else {
      prompt += std::string(", ") + op + std::to_string(x);
      steps += std::to_string(value) + op + std::to_string(x) + "=" + std::to_string(next);
    }
    value = next;
  }
  Problem p;
  p.task = name();
  p.key = prompt;
  p.prompt = prompt + "\n";
  p.answer = std::to_string(value);
  p.reference_solution = steps + "\n#### " + p.answer;
  return p;
}

}  // namespace gtpo::data
