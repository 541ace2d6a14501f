#include "data/tasks/task.h"

#include <algorithm>

#include "data/verify/answer.h"
#include "runtime/error.h"

namespace gtpo::data {

const char* split_name(Split split) { return split == Split::train ? "train" : "test"; }

Split Task::split_of_key(std::string_view key) const {
  // The salt is fixed forever: changing it would silently move problems between splits.
  const uint64_t h = hash_combine(hash_string(name()), hash_string(key)) ^ 0x5EED5EED5EED5EEDULL;
  const double u = static_cast<double>(mix64(h) >> 11) * 0x1.0p-53;
  return u < test_fraction_ ? Split::test : Split::train;
}

Problem Task::generate(uint64_t seed, Split split, uint64_t index) const {
  // Each attempt gets its own stream so a rejection never shifts later indices.
  constexpr uint64_t kMaxAttempts = 100000;
  const uint64_t base = hash_combine(hash_combine(hash_combine(hash_string(name()), seed),
                                                  static_cast<uint64_t>(split)), index);
  for (uint64_t attempt = 0; attempt < kMaxAttempts; ++attempt) {
    Rng rng(hash_combine(base, attempt));
    std::optional<Problem> p = candidate(rng);
    if (p && split_of_key(p->key) == split) return std::move(*p);
  }
  fail("task ", name(), ": no ", split_name(split), " problem found in ", kMaxAttempts,
       " draws (is test_fraction ", test_fraction_, " too extreme for this difficulty?)");
}

Verdict Task::check(const Problem& problem, std::string_view completion) const {
  return check_final_answer(problem.answer, completion);
}

std::string sorted_unique_chars(std::string_view text) {
  std::string out(text);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace gtpo::data
