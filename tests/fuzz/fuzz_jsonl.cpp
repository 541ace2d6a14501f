// JSONL datasets (data/jsonl.cpp, data/dataset.cpp): every line parsed, every record read as a problem,
// and a problem's answer judged against the record's own text as a completion.
#include "data/dataset.h"
#include "data/jsonl.h"
#include "data/verify/answer.h"
#include "tests/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return gtpo::fuzz::run_one([&] {
    for (const auto& line : gtpo::data::parse_jsonl(text, "fuzz.jsonl")) {
      const gtpo::data::Problem p = gtpo::data::problem_from_json(line);
      (void)gtpo::data::check_final_answer(p.answer, p.prompt);
      (void)gtpo::data::problem_to_json(p).dump();
    }
  });
}
