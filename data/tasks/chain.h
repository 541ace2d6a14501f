// chain: apply k operations left to right to a starting number, e.g.
//   prompt "start 7, +3, *2, -5\n"  ->  solution "7+3=10 10*2=20 20-5=15\n#### 15".
// difficulty d (1..8) gives k = d + 1 operations. The start is in [1, 20]; operands are single
// digits (+ and - use 1..9, * and / use 2..9); every intermediate value stays in [0, 999] and
// every division is exact. Options: difficulty (default 2), test_fraction (default 0.1).
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
  int steps_;
};

}  // namespace gtpo::data
