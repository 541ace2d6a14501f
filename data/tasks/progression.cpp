#include "data/tasks/progression.h"

#include "runtime/error.h"

namespace gtpo::data {

const std::vector<std::string>& ProgressionTask::option_names() {
  static const std::vector<std::string> names = {"max_steps", "min_steps", "test_fraction"};
  return names;
}

ProgressionTask::ProgressionTask(const TaskOptions& options)
    : Task(options.get_double("progression", "test_fraction", 0.1, 0.01, 0.99)),
      min_steps_(static_cast<int>(options.get_int("progression", "min_steps", 6, 1, 64))),
      max_steps_(static_cast<int>(options.get_int("progression", "max_steps", std::max(min_steps_, 20), 1, 64))) {
  options.check_known("progression", option_names());
  GTPO_CHECK(min_steps_ <= max_steps_, "task progression: option 'min_steps' (", min_steps_,
             ") must not exceed 'max_steps' (", max_steps_, ")");
}

std::string ProgressionTask::alphabet() const { return sorted_unique_chars("0123456789+=<># abfmoprsty\n"); }

std::optional<Problem> ProgressionTask::candidate(Rng& rng) const {
  const int64_t start = rng.range(1, 20);
  const int64_t step = rng.range(2, 9);
  const int64_t length = rng.range(min_steps_, max_steps_);
  // The bound lies in the last stride, so exactly LENGTH steps pass it.
  const int64_t bound = start + step * (length - 1) + rng.range(0, step - 1);
  std::string steps;
  int64_t value = start;
  while (value <= bound) {
    if (!steps.empty()) steps += ' ';
    value += step;
    // Each step compares its value with the bound, so the stop is learnt at every step and not from the one
    // end-of-list decision per problem (without it a 0.75M model stopped by length, at 4% accuracy).
    steps += std::to_string(value - step) + "+" + std::to_string(step) + "=" + std::to_string(value) +
             (value > bound ? ">" : "<") + std::to_string(bound);
  }
  Problem p;
  p.task = name();
  p.key = "from " + std::to_string(start) + " by " + std::to_string(step) + " past " + std::to_string(bound);
  p.prompt = p.key + "\n";
  p.answer = std::to_string(value);
  p.reference_solution = steps + "\n#### " + p.answer;
  return p;
}

}  // namespace gtpo::data
