#include "data/tasks/arith.h"

#include <algorithm>
#include <vector>

#include "runtime/error.h"

namespace gtpo::data {

namespace {

std::vector<int> digits_lsb_first(int64_t x) {
  std::vector<int> d;
  do {
    d.push_back(static_cast<int>(x % 10));
    x /= 10;
  } while (x > 0);
  return d;
}

// Column addition, least significant column first: "7+5=12 4+8+1=13" ("+1" is the carry in).
// The last column's sum carries any final carry, so the answer reads off the column sums.
std::string addition_steps(int64_t a, int64_t b) {
  const auto da = digits_lsb_first(a), db = digits_lsb_first(b);
  std::string out;
  int carry = 0;
  for (std::size_t i = 0; i < std::max(da.size(), db.size()); ++i) {
    const int x = i < da.size() ? da[i] : 0, y = i < db.size() ? db[i] : 0;
    const int s = x + y + carry;
    if (!out.empty()) out += ' ';
    out += std::to_string(x) + "+" + std::to_string(y) + (carry ? "+1" : "") + "=" + std::to_string(s);
    carry = s / 10;
  }
  return out;
}

// Column subtraction of TOP - BOTTOM with TOP >= BOTTOM, least significant column first. A column
// that must borrow writes its top digit plus ten ("12-5=7"); a borrow from the previous column
// is "-1" ("13-8-1=4"). Every step is a true equation.
std::string subtraction_steps(int64_t top, int64_t bottom) {
  const auto dt = digits_lsb_first(top), db = digits_lsb_first(bottom);
  std::string out;
  int borrow = 0;
  for (std::size_t i = 0; i < dt.size(); ++i) {
    const int x = dt[i], y = i < db.size() ? db[i] : 0;
    const bool need = x - y - borrow < 0;
    const int v = x + (need ? 10 : 0) - y - borrow;
    if (!out.empty()) out += ' ';
    out += std::to_string(x + (need ? 10 : 0)) + "-" + std::to_string(y) + (borrow ? "-1" : "") + "=" +
           std::to_string(v);
    borrow = need ? 1 : 0;
  }
  return out;
}

// Long multiplication: one partial product per non-zero digit of B ("47*80=3760"), then a
// running sum of the partials ("235+3760=3995").
std::string multiplication_steps(int64_t a, int64_t b) {
  const auto db = digits_lsb_first(b);
  std::vector<int64_t> partials;
  std::string out;
  int64_t place = 1;
  for (int d : db) {
    if (d != 0) {
      const int64_t factor = d * place;
      partials.push_back(a * factor);
      if (!out.empty()) out += ' ';
      out += std::to_string(a) + "*" + std::to_string(factor) + "=" + std::to_string(a * factor);
    }
    place *= 10;
  }
  if (partials.empty()) return std::to_string(a) + "*0=0";
  int64_t sum = partials[0];
  for (std::size_t i = 1; i < partials.size(); ++i) {
    // Appended piecewise: `" " + std::to_string(...)` trips a GCC 12 -Wrestrict false positive.
    out += ' ';
    out += std::to_string(sum) + "+" + std::to_string(partials[i]) + "=" + std::to_string(sum + partials[i]);
    sum += partials[i];
  }
  return out;
}

int64_t apply(int64_t a, char op, int64_t b) { return op == '+' ? a + b : op == '-' ? a - b : a * b; }

}  // namespace

const std::vector<std::string>& ArithTask::option_names() {
  static const std::vector<std::string> names = {"difficulty", "ops", "scratchpad", "test_fraction"};
  return names;
}

ArithTask::ArithTask(const TaskOptions& options)
    : Task(options.get_double("arith", "test_fraction", 0.1, 0.01, 0.99)),
      digits_(static_cast<int>(options.get_int("arith", "difficulty", 2, 1, 9))),
      ops_(options.get_string("arith", "ops", "+-*")),
      scratchpad_(options.get_bool("arith", "scratchpad", true)) {
  options.check_known("arith", option_names());
  GTPO_CHECK(!ops_.empty(), "task arith: option 'ops' must name at least one of + - *");
  for (char c : ops_) {
    GTPO_CHECK(c == '+' || c == '-' || c == '*', "task arith: option 'ops' may only contain + - * (got '", ops_,
               "')");
  }
  // Duplicates would skew the operator mix; keep each operator once, in a fixed order.
  std::string unique;
  for (char c : std::string("+-*")) {
    if (ops_.find(c) != std::string::npos) unique += c;
  }
  ops_ = unique;
}

std::string ArithTask::alphabet() const { return sorted_unique_chars("0123456789+-*=?#() \n"); }

std::string ArithTask::solution(int64_t a, char op, int64_t b) const {
  const std::string answer = std::to_string(apply(a, op, b));
  if (!scratchpad_) return "#### " + answer;
  std::string steps;
  if (op == '+') {
    steps = addition_steps(a, b);
  } else if (op == '-') {
    // A negative difference is rewritten as the negated swapped difference first.
    steps = a >= b ? subtraction_steps(a, b)
                   : std::to_string(a) + "-" + std::to_string(b) + "=-(" + std::to_string(b) + "-" +
                         std::to_string(a) + ") " + subtraction_steps(b, a);
  } else {
    steps = multiplication_steps(a, b);
  }
  return steps + "\n#### " + answer;
}

std::optional<Problem> ArithTask::candidate(Rng& rng) const {
  int64_t limit = 1;
  for (int i = 0; i < digits_; ++i) limit *= 10;
  const char op = ops_[rng.below(ops_.size())];
  const int64_t a = rng.range(0, limit - 1);
  const int64_t b = rng.range(0, limit - 1);
  Problem p;
  p.task = name();
  p.key = std::to_string(a) + op + std::to_string(b);
  p.prompt = p.key + "=?\n";
  p.answer = std::to_string(apply(a, op, b));
  p.reference_solution = solution(a, op, b);
  return p;
}

}  // namespace gtpo::data
