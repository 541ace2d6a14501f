#include "data/tasks/chain.h"

#include <array>
#include <vector>

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
  static const std::vector<std::string> names = {"difficulty", "test_fraction"};
  return names;
}

ChainTask::ChainTask(const TaskOptions& options)
    : Task(options.get_double("chain", "test_fraction", 0.1, 0.01, 0.99)),
      steps_(static_cast<int>(options.get_int("chain", "difficulty", 2, 1, 8)) + 1) {
  options.check_known("chain", option_names());
}

std::string ChainTask::alphabet() const { return sorted_unique_chars("0123456789+-*/=#, start\n"); }

std::optional<Problem> ChainTask::candidate(Rng& rng) const {
  int64_t value = rng.range(1, 20);
  std::string prompt = "start " + std::to_string(value);
  std::string steps;
  for (int i = 0; i < steps_; ++i) {
    // Pick the operator uniformly among those with at least one legal operand, then the operand
    // uniformly among the legal ones; choosing uniformly over (op, operand) pairs instead would
    // make exact division, which has few legal operands, very rare.
    std::vector<std::pair<char, std::vector<int64_t>>> choices;
    for (char op : std::array<char, 4>{'+', '-', '*', '/'}) {
      std::vector<int64_t> operands;
      for (int64_t x = (op == '*' || op == '/') ? 2 : 1; x <= 9; ++x) {
        if (feasible(value, op, x)) operands.push_back(x);
      }
      if (!operands.empty()) choices.emplace_back(op, std::move(operands));
    }
    const auto& [op, operands] = choices[rng.below(choices.size())];
    const int64_t x = operands[rng.below(operands.size())];
    const int64_t next = apply(value, op, x);
    prompt += std::string(", ") + op + std::to_string(x);
    if (!steps.empty()) steps += ' ';
    steps += std::to_string(value) + op + std::to_string(x) + "=" + std::to_string(next);
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
