#include "data/tasks/countdown.h"

#include <algorithm>
#include <map>

#include "data/verify/answer.h"
#include "data/verify/expression.h"

namespace gtpo::data {

namespace {

constexpr int64_t kMaxTarget = 999;

// A sub-expression while building: its value, its text, and the precedence of its top operator
// (1 for + -, 2 for * /, 3 for a bare number) so parentheses are written only where needed.
struct Node {
  int64_t value;
  std::string text;
  int prec;
};

int precedence(char op) { return (op == '+' || op == '-') ? 1 : 2; }

std::string combine_text(const Node& l, char op, const Node& r) {
  const int p = precedence(op);
  const bool wrap_l = l.prec < p;
  // The right side also needs parentheses at equal precedence under - and /: a-(b-c), a/(b*c).
  const bool wrap_r = r.prec < p || (r.prec == p && (op == '-' || op == '/'));
  return (wrap_l ? "(" + l.text + ")" : l.text) + op + (wrap_r ? "(" + r.text + ")" : r.text);
}

// The legal ways to combine two values: positive integer results, no division by 1; + and *
// are listed once because they commute.
struct Move {
  bool swap;
  char op;
};
std::vector<Move> legal_moves(int64_t a, int64_t b) {
  std::vector<Move> moves{{false, '+'}, {false, '*'}};
  if (a > b) moves.push_back({false, '-'});
  if (b > a) moves.push_back({true, '-'});
  if (b > 1 && a % b == 0) moves.push_back({false, '/'});
  if (a > 1 && b % a == 0) moves.push_back({true, '/'});
  return moves;
}

int64_t apply(int64_t a, char op, int64_t b) {
  switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    default: return a / b;
  }
}

}  // namespace

const std::vector<std::string>& CountdownTask::option_names() {
  static const std::vector<std::string> names = {"difficulty", "test_fraction"};
  return names;
}

CountdownTask::CountdownTask(const TaskOptions& options)
    : Task(options.get_double("countdown", "test_fraction", 0.1, 0.01, 0.99)) {
  options.check_known("countdown", option_names());
  const int64_t difficulty = options.get_int("countdown", "difficulty", 1, 1, 4);
  count_ = difficulty == 1 ? 3 : 4;
  max_number_ = difficulty <= 2 ? 9 : difficulty == 3 ? 25 : 100;
}

std::string CountdownTask::alphabet() const { return sorted_unique_chars("0123456789+-*/()=# usetomak\n"); }

std::optional<Problem> CountdownTask::candidate(Rng& rng) const {
  std::vector<int64_t> numbers;
  std::vector<Node> pool;
  for (int i = 0; i < count_; ++i) {
    numbers.push_back(rng.range(1, max_number_));
    pool.push_back({numbers.back(), std::to_string(numbers.back()), 3});
  }
  std::string steps;
  while (pool.size() > 1) {
    const std::size_t i = rng.below(pool.size());
    std::size_t j = rng.below(pool.size() - 1);
    if (j >= i) ++j;
    const auto moves = legal_moves(pool[i].value, pool[j].value);
    const Move move = moves[rng.below(moves.size())];
    const Node& l = move.swap ? pool[j] : pool[i];
    const Node& r = move.swap ? pool[i] : pool[j];
    const int64_t value = apply(l.value, move.op, r.value);
    // Products of four numbers up to 100 fit easily in int64, but keep intermediates small so
    // solutions stay short.
    if (value > 100 * kMaxTarget) return std::nullopt;
    if (!steps.empty()) steps += ' ';
    steps += std::to_string(l.value) + move.op + std::to_string(r.value) + "=" + std::to_string(value);
    Node merged{value, combine_text(l, move.op, r), precedence(move.op)};
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
    pool.push_back(std::move(merged));
  }
  const int64_t target = pool[0].value;
  if (target < 2 || target > kMaxTarget) return std::nullopt;
  if (std::find(numbers.begin(), numbers.end(), target) != numbers.end()) return std::nullopt;

  // Show the numbers in a fresh random order so the prompt does not reveal the tree's order.
  for (std::size_t k = numbers.size(); k > 1; --k) std::swap(numbers[k - 1], numbers[rng.below(k)]);
  std::vector<int64_t> sorted = numbers;
  std::sort(sorted.begin(), sorted.end());

  Problem p;
  p.task = name();
  for (int64_t n : sorted) p.key += std::to_string(n) + " ";
  p.key += "-> " + std::to_string(target);
  p.prompt = "use";
  for (int64_t n : numbers) p.prompt += " " + std::to_string(n);
  p.prompt += " to make " + std::to_string(target) + "\n";
  p.answer = pool[0].text;
  p.reference_solution = steps + "\n#### " + p.answer;
  p.numbers = numbers;
  p.target = target;
  return p;
}

Verdict CountdownTask::check(const Problem& problem, std::string_view completion) const {
  Verdict v;
  const auto answer = extract_answer(completion);
  if (!answer) return v;
  v.has_answer = true;
  v.extracted = answer->text;

  // An optional "=TARGET" after the expression is allowed; it must name the target.
  std::string_view expression = answer->text;
  bool claimed_ok = true;
  const std::size_t eq = expression.rfind('=');
  if (eq != std::string_view::npos) {
    const auto claimed = normalize_number(expression.substr(eq + 1));
    claimed_ok = claimed && *claimed == std::to_string(problem.target);
    expression = expression.substr(0, eq);
  }
  const Evaluation eval = evaluate_expression(expression);
  // Well formed: a syntactically valid expression (division by zero and overflow are
  // evaluation failures of a well-formed expression, but count as malformed here for simplicity).
  v.well_formed = eval.value.has_value() && answer->clean_tail;
  if (!eval.value || !claimed_ok) return v;

  std::map<int64_t, int> available;
  for (int64_t n : problem.numbers) ++available[n];
  for (int64_t n : eval.literals) {
    if (--available[n] < 0) return v;  // not given, or used more often than given
  }
  v.correct = *eval.value == Rational{problem.target, 1};
  return v;
}

}  // namespace gtpo::data
