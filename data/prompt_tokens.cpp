#include "data/prompt_tokens.h"

namespace gtpo::data {

std::vector<int32_t> encode_prompt(const Tokenizer& tokenizer, const Problem& problem) {
  return problem.rendered ? tokenizer.encode_hf(problem.prompt, /*add_special_tokens=*/false)
                          : tokenizer.encode(problem.prompt);
}

}  // namespace gtpo::data
