// The Task interface: a seeded, deterministic generator of problems with reference solutions and
// a verifier. Train and test problems are disjoint by construction: a problem's split is a pure
// function of its canonical key (a hash), independent of seed and index, and generate() rejects
// candidates from the other split.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/rng.h"
#include "data/verify/verdict.h"

namespace gtpo::data {

enum class Split { train, test };

const char* split_name(Split split);

struct Problem {
  std::string task;                // name of the task that made it ("jsonl" for datasets)
  std::string key;                 // canonical identity: equal keys mean the same problem
  std::string prompt;              // what the model sees; ends with '\n'
  // The prompt went through a chat template or prompt.template: trusted text whose added tokens
  // ("<|im_start|>") are matched when it is encoded (data/prompt_tokens.h).
  bool rendered = false;
  std::string answer;              // the expected final answer (countdown: one valid expression)
  std::string reference_solution;  // a full correct completion, for SFT; ends with "#### ANSWER"
  // Task-specific payload. countdown: the given numbers and the target.
  std::vector<int64_t> numbers;
  int64_t target = 0;
  // A dataset row as it was read (compact JSON text, every column); empty for generated problems. External
  // reward functions get its columns (docs/rewards.md).
  std::string row;
};

class Task {
 public:
  virtual ~Task() = default;

  virtual std::string name() const = 0;

  // The INDEX-th problem of SPLIT for SEED. Same arguments, same problem, on any platform.
  Problem generate(uint64_t seed, Split split, uint64_t index) const;

  // Judges a completion (the model's text after the prompt).
  virtual Verdict check(const Problem& problem, std::string_view completion) const;
  bool verify(const Problem& problem, std::string_view completion) const { return check(problem, completion).correct; }

  // Which split a canonical key belongs to: a hash of the task name and key against test_fraction.
  Split split_of_key(std::string_view key) const;

  // Every character that prompts and reference solutions of this task can contain, sorted and
  // unique (includes '\n'), so a character-level tokenizer can be built before any data exists.
  virtual std::string alphabet() const = 0;

  double test_fraction() const { return test_fraction_; }

 protected:
  explicit Task(double test_fraction) : test_fraction_(test_fraction) {}

  // One random candidate problem (task, key, prompt, answer, solution filled in), or nullopt to
  // ask for another draw (e.g. a countdown tree whose target is out of range).
  virtual std::optional<Problem> candidate(Rng& rng) const = 0;

 private:
  double test_fraction_;
};

// Sorted, de-duplicated characters of TEXT (helper for alphabet()).
std::string sorted_unique_chars(std::string_view text);

}  // namespace gtpo::data
