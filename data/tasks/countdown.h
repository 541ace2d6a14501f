// countdown: reach a target from given numbers with + - * / and parentheses, each number used at
// most once, e.g. prompt "use 3 5 7 to make 22\n" -> solution "3*5=15 15+7=22\n#### 3*5+7".
// difficulty: 1 = three numbers in 1..9, 2 = four in 1..9, 3 = four in 1..25, 4 = four in 1..100.
// Generation builds a random expression over all the numbers (positive integer intermediates,
// no division by 1), so every problem is solvable; the target is in [2, 999] and is not itself
// one of the numbers. Any expression that evaluates exactly to the target is accepted (see check).
// Options: difficulty (default 1), test_fraction (default 0.1).
#pragma once
#include "data/tasks/options.h"
#include "data/tasks/task.h"

namespace gtpo::data {

class CountdownTask : public Task {
 public:
  explicit CountdownTask(const TaskOptions& options);

  static const std::vector<std::string>& option_names();

  std::string name() const override { return "countdown"; }
  std::string alphabet() const override;

  // Correct when the answer after "####" is an expression (optionally followed by "=TARGET")
  // that uses only given numbers, each at most as often as given, and equals the target exactly
  // in rational arithmetic (non-integer intermediates such as 7/2*4 are allowed). Division by
  // zero, a malformed expression or an unknown number is simply incorrect.
  Verdict check(const Problem& problem, std::string_view completion) const override;

 protected:
  std::optional<Problem> candidate(Rng& rng) const override;

 private:
  int count_;
  int64_t max_number_;
};

}  // namespace gtpo::data
