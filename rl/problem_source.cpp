#include "rl/problem_source.h"

#include "data/dataset.h"
#include "data/tasks/registry.h"
#include "data/verify/answer.h"
#include "runtime/error.h"

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
                                        const data::chat::PromptFormat& format) {
  ProblemSource s;
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
  return train_[index % train_.size()];
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
