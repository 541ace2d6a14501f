#include "rl/problem_source.h"

#include "data/dataset.h"
#include "data/tasks/registry.h"
#include "data/verify/answer.h"
#include "runtime/error.h"
#include "runtime/random.h"

namespace gtpo::rl {

ProblemSource ProblemSource::from_task(std::unique_ptr<data::Task> task, uint64_t seed,
                                       const data::chat::PromptFormat& format) {
  ProblemSource s;
  s.task_ = std::move(task);
  s.seed_ = seed;
  s.format_ = format;
  return s;
}

ProblemSource ProblemSource::from_files(const std::string& train_path, const std::string& test_path,
                                        const data::chat::PromptFormat& format,
                                        std::optional<uint64_t> shuffle_seed) {
  ProblemSource s;
  s.shuffle_seed_ = shuffle_seed;
  s.train_ = data::load_problems(train_path, format);
  s.test_ = data::load_problems(test_path, format);
  GTPO_CHECK(!s.train_.empty(), train_path, ": no problems");
  GTPO_CHECK(!s.test_.empty(), test_path, ": no problems");
  for (const auto* set : {&s.train_, &s.test_})
    for (const data::Problem& p : *set)
      if (p.task != "jsonl" && !s.row_tasks_.count(p.task)) s.row_tasks_[p.task] = data::make_task(p.task);
  return s;
}

namespace {
constexpr uint64_t kShuffleStream = 0x5348554646ull;  // "SHUFF": keys the epochs' orders apart from sampling

// A bijection of [0, n) keyed by KEY: a 4-round Feistel network over the smallest even bit width that
// holds n, applied again while the value lands outside [0, n) (cycle walking keeps it a bijection).
// O(1) per index and stateless, so any row of any epoch is found without building the order.
uint64_t keyed_permutation(uint64_t i, uint64_t n, uint64_t key) {
  int bits = 2;
  while (bits < 64 && (uint64_t{1} << bits) < n) bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t x = i;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (uint64_t round = 0; round < 4; ++round) {
      const uint64_t next = left ^ (counter_hash(key, round, right) & mask);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= n);
  return x;
}

data::Problem formatted(data::Problem p, const data::chat::PromptFormat& format) {
  if (format.transforms_plain()) {
    p.prompt = format.plain(p.prompt);
    p.rendered = true;
  }
  return p;
}
}  // namespace

data::Problem ProblemSource::train(uint64_t index) const {
  if (task_) return formatted(task_->generate(seed_, data::Split::train, index), format_);
  const uint64_t rows = train_.size();
  if (!shuffle_seed_) return train_[index % rows];
  const uint64_t epoch = index / rows;
  return train_[keyed_permutation(index % rows, rows, counter_hash(*shuffle_seed_, epoch, kShuffleStream))];
}

data::Problem ProblemSource::test(uint64_t index) const {
  // The test stream does not depend on the training seed: every run evaluates on the same problems.
  if (task_) return formatted(task_->generate(0, data::Split::test, index), format_);
  return test_[index % test_.size()];
}

int64_t ProblemSource::test_count(int64_t wanted) const {
  return task_ ? wanted : std::min<int64_t>(wanted, static_cast<int64_t>(test_.size()));
}

data::Verdict ProblemSource::check(const data::Problem& problem, std::string_view completion) const {
  if (task_) return task_->check(problem, completion);
  const auto named = row_tasks_.find(problem.task);  // a row that names its task keeps its verifier
  return named != row_tasks_.end() ? named->second->check(problem, completion)
                                   : data::check_final_answer(problem.answer, completion);
}

std::string ProblemSource::alphabet() const {
  // A format adds its own characters: rendering the alphabet itself shows them (char tokenizers need them).
  if (task_) return format_.transforms_plain() ? data::sorted_unique_chars(task_->alphabet() + format_.plain(task_->alphabet()))
                                               : task_->alphabet();
  std::string all;
  for (const auto* set : {&train_, &test_})
    for (const data::Problem& p : *set) all += p.prompt + p.reference_solution + p.answer;
  return data::sorted_unique_chars(all + "\n");
}

std::string ProblemSource::name() const { return task_ ? task_->name() : "jsonl"; }

}  // namespace gtpo::rl
