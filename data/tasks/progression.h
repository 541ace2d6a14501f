// progression: count from a start in steps of a fixed size until the value passes a bound, e.g.
//   prompt "from 7 by 3 past 20\n"  ->  solution "7+3=10<20 10+3=13<20 13+3=16<20 16+3=19<20 19+3=22>20\n#### 22".
// The answer is the first value above the bound; each step compares its value with the bound. Every step
// depends only on the step before it and on two numbers at fixed places in the prompt, so the reasoning is
// long without any lookup along a list;
// its length, k steps, is drawn per problem from [min_steps, max_steps] (the long-reasoning study,
// configs/study-progression.yaml). The start is in [1, 20], the step in [2, 9], the bound in
// [start + step·(k−1), start + step·k). Options: min_steps (default 6), max_steps (default 20),
// test_fraction (default 0.1).
#pragma once
#include "data/tasks/options.h"
#include "data/tasks/task.h"

namespace gtpo::data {

class ProgressionTask : public Task {
 public:
  explicit ProgressionTask(const TaskOptions& options);

  static const std::vector<std::string>& option_names();

  std::string name() const override { return "progression"; }
  std::string alphabet() const override;

 protected:
  std::optional<Problem> candidate(Rng& rng) const override;

 private:
  int min_steps_;
  int max_steps_;
};

}  // namespace gtpo::data
