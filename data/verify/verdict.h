// The outcome of checking one completion. Rewards built from it (the `correct` and `format` built-ins)
// are in rl/reward.h.
#pragma once
#include <string>

namespace gtpo::data {

struct Verdict {
  bool correct = false;      // the extracted answer is right
  bool well_formed = false;  // the completion follows the documented answer format (docs/tasks.md)
  bool has_answer = false;   // an answer marker was found at all
  std::string extracted;     // the answer text that was judged (empty when none was found)
};

}  // namespace gtpo::data
