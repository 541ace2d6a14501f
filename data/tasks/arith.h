// arith: one multi-digit addition, subtraction or multiplication, e.g. prompt "47+85=?\n".
// difficulty = the number of digits d (1..9): both operands are uniform in [0, 10^d).
// Options: difficulty (default 2), ops (subset of "+-*", default "+-*"), scratchpad (default true),
// test_fraction (default 0.1). Formats are documented in docs/tasks.md.
#pragma once
#include "data/tasks/options.h"
#include "data/tasks/task.h"

namespace gtpo::data {

class ArithTask : public Task {
 public:
  explicit ArithTask(const TaskOptions& options);

  static const std::vector<std::string>& option_names();

  std::string name() const override { return "arith"; }
  std::string alphabet() const override;

  // The reference completion for A OP B (exposed for tests and docs).
  std::string solution(int64_t a, char op, int64_t b) const;

 protected:
  std::optional<Problem> candidate(Rng& rng) const override;

 private:
  int digits_;
  std::string ops_;
  bool scratchpad_;
};

}  // namespace gtpo::data
