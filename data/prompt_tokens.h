// The token ids of a problem's prompt: the one function the sampler, evaluation, SFT and the run checks use,
// so that all of them see the same ids for the same prompt.
#pragma once
#include <cstdint>
#include <vector>

#include "data/tasks/task.h"
#include "data/tokenizer/tokenizer.h"

namespace gtpo::data {

// A prompt as it came (task text, a dataset's plain prompt) is encoded text-only (Tokenizer::encode), so
// task text cannot inject control tokens. A rendered prompt (chat template or prompt.template) is encoded as
// TRL encodes it, `tokenizer(text, add_special_tokens=False)`: the template's own "<|im_start|>" or
// "<|begin_of_text|>" become their ids, and no post-processor token is added (the template writes its BOS).
std::vector<int32_t> encode_prompt(const Tokenizer& tokenizer, const Problem& problem);

}  // namespace gtpo::data
