// The train file's order: file order, or a new keyed permutation every epoch (task.shuffle), fixed by the
// seed and the cursor alone, so a run and its resume read the same rows.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "rl/problem_source.h"
#include "runtime/io/atomic_file.h"
#include "tests/support/commands.h"

using namespace gtpo;
using rl::ProblemSource;

namespace {
// A file of N rows whose prompts are "0" .. "N-1", and the prompts of train(first .. first + count - 1).
std::string write_rows(const std::string& dir, int n) {
  std::string text;
  for (int i = 0; i < n; ++i) text += R"({"prompt": ")" + std::to_string(i) + R"(", "answer": "1"})" + "\n";
  io::write_file_atomic(dir + "/rows.jsonl", text);
  return dir + "/rows.jsonl";
}
std::vector<int> prompts(const ProblemSource& s, uint64_t first, int count) {
  std::vector<int> out;
  for (int i = 0; i < count; ++i) out.push_back(std::stoi(s.train(first + static_cast<uint64_t>(i)).prompt));
  return out;
}
}  // namespace

TEST_CASE("problem source: a shuffled train file is a new permutation each epoch, fixed by seed and cursor",
          "[rl][data]") {
  const std::string dir = testing::fresh_temp_dir("problem_source_shuffle");
  for (int n : {1, 2, 3, 50, 257}) {
    INFO("rows " << n);
    const std::string file = write_rows(dir, n);
    const ProblemSource plain = ProblemSource::from_files(file, file);
    const ProblemSource a = ProblemSource::from_files(file, file, {}, 7),
                        again = ProblemSource::from_files(file, file, {}, 7);
    const ProblemSource other = ProblemSource::from_files(file, file, {}, 8);
    std::vector<int> in_order(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) in_order[static_cast<size_t>(i)] = i;
    CHECK(prompts(plain, 0, n) == in_order);
    CHECK(prompts(plain, static_cast<uint64_t>(n), n) == in_order);
    for (uint64_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<int> order = prompts(a, epoch * static_cast<uint64_t>(n), n);
      CHECK(order == prompts(again, epoch * static_cast<uint64_t>(n), n));  // the seed and index alone
      std::sort(order.begin(), order.end());
      CHECK(order == in_order);  // every row exactly once per epoch
    }
    if (n >= 50) {
      CHECK(prompts(a, 0, n) != in_order);
      CHECK(prompts(a, 0, n) != prompts(a, static_cast<uint64_t>(n), n));  // epochs differ
      CHECK(prompts(a, 0, n) != prompts(other, 0, n));                     // seeds differ
      // Any index reads the same row however the reads are split (a resume starts mid-epoch).
      const std::vector<int> first57 = prompts(a, 0, 57);
      CHECK(prompts(a, 17, 40) == std::vector<int>(first57.begin() + 17, first57.end()));
    }
  }
}
