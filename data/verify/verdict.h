// The outcome of checking one completion, and how it turns into a scalar reward.
#pragma once
#include <string>

namespace gtpo::data {

struct Verdict {
  bool correct = false;      // the extracted answer is right
  bool well_formed = false;  // the completion follows the documented answer format (docs/tasks.md)
  bool has_answer = false;   // an answer marker was found at all
  std::string extracted;     // the answer text that was judged (empty when none was found)
};

struct RewardOptions {
  double correct_reward = 1.0;  // added when the answer is correct
  double format_reward = 0.0;   // added when the completion is well formed, right or wrong
};

inline double reward(const Verdict& v, const RewardOptions& options = {}) {
  return (v.correct ? options.correct_reward : 0.0) + (v.well_formed ? options.format_reward : 0.0);
}

}  // namespace gtpo::data
