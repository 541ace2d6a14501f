// Where training and evaluation problems come from: a task generator (train/test split by hash) or a
// pair of JSONL files. Indices are the data cursor: problem i of a split is fixed for a given seed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/chat/prompt_format.h"
#include "data/tasks/task.h"

namespace gtpo::rl {

class ProblemSource {
 public:
  // FORMAT turns prompts into model text (rl/prompt_template.h decides it); the default leaves them as they are.
  static ProblemSource from_task(std::unique_ptr<data::Task> task, uint64_t seed,
                                 const data::chat::PromptFormat& format = {});
  // SHUFFLE_SEED given: train(i) walks the train file in a new order each epoch (i / rows), a keyed
  // permutation of the rows drawn from the seed and the epoch, so the cursor alone fixes the order (resume
  // continues it); absent: file order.
  static ProblemSource from_files(const std::string& train_path, const std::string& test_path,
                                  const data::chat::PromptFormat& format = {},
                                  std::optional<uint64_t> shuffle_seed = std::nullopt);

  data::Problem train(uint64_t index) const;
  data::Problem test(uint64_t index) const;
  // Number of distinct test problems: the file's size, or `wanted` for a generator.
  int64_t test_count(int64_t wanted) const;
  // Number of train problems in the file; 0 for a generator (it has no end).
  int64_t train_size() const { return task_ ? 0 : static_cast<int64_t>(train_.size()); }
  data::Verdict check(const data::Problem& problem, std::string_view completion) const;
  // Characters prompts and solutions can hold (for a character-level tokenizer).
  std::string alphabet() const;
  std::string name() const;

 private:
  std::shared_ptr<data::Task> task_;
  uint64_t seed_ = 0;
  data::chat::PromptFormat format_;  // applied to generated prompts (file rows are rendered when loaded)
  std::vector<data::Problem> train_, test_;
  std::optional<uint64_t> shuffle_seed_;
  // Verifiers of the tasks the files' rows name ("task": "countdown"), by name.
  std::map<std::string, std::shared_ptr<data::Task>> row_tasks_;
};

}  // namespace gtpo::rl
