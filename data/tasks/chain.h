// chain: apply k operations left to right to a starting number, e.g.
//   prompt "start 7, +3, *2, -5\n"  ->  solution "7+3=10 10*2=20 20-5=15\n#### 15".
// difficulty d (1..8) gives k = d + 1 operations; min_steps/max_steps (1..32) instead draw k
// uniformly per problem, so the reasoning's length varies with the problem (the long-reasoning
// study). The start is in [1, 20]; operands are single digits (+ and - use 1..9, * and / use 2..9);
// every intermediate value stays in [0, 999] and every division is exact. ops (default "+-*/")
// limits the operators. labels (default false) names the operations a, b, c, ... in the prompt and the
// steps: "start 7, a+3, b*2\n" -> "a+3=10 b*2=20\n#### 20" (at most 26 steps).
// Options: difficulty (default 2), labels, min_steps, max_steps, ops, test_fraction.
#pragma once
#include "data/tasks/options.h"
#include "data/tasks/task.h"

namespace gtpo::data {

class ChainTask : public Task {
 public:
  explicit ChainTask(const TaskOptions& options);

  static const std::vector<std::string>& option_names();

  std::string name() const override { return "chain"; }
  std::string alphabet() const override;

 protected:
  std::optional<Problem> candidate(Rng& rng) const override;

 private:
  int min_steps_;
  int max_steps_;
  std::string ops_;
  bool labels_;
};

}  // namespace gtpo::data
