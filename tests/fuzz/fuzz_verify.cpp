// The verifiers (data/verify/): the input's first line is the expected answer, the rest the completion.
// They never throw: every outcome is a verdict (or an error string for expressions).
#include "data/verify/answer.h"
#include "data/verify/expression.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = text.find('\n');
  const std::string_view expected = text.substr(0, nl);
  const std::string_view completion = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  return gtpo::fuzz::run_one([&] {
    const gtpo::data::Verdict v = gtpo::data::check_final_answer(expected, completion);
    if (v.correct && !v.has_answer) std::abort();  // correct needs an answer
    (void)gtpo::data::normalize_number(text);
    (void)gtpo::data::answers_match(expected, completion);
    const gtpo::data::Evaluation e = gtpo::data::evaluate_expression(completion);
    if (e.value.has_value() == !e.error.empty()) std::abort();  // exactly one of value and error
    if (e.value && e.value->den <= 0) std::abort();             // a reduced fraction has den > 0
  });
}
