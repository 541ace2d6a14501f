// Hugging Face post-processors (tokenizer.json "post_processor") for single sequences: TemplateProcessing
// (e.g. Llama 3's <|begin_of_text|>), BertProcessing / RobertaProcessing (cls ... sep), ByteLevel (nothing
// to do on ids) and Sequence. Applied only when add_special_tokens is on. Anything else is refused.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "data/tokenizer/hf/json_access.h"

namespace gtpo::data::hf {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual std::vector<int32_t> process(std::vector<int32_t> ids) const = 0;
};

std::unique_ptr<PostProcessor> parse_post_processor(const HfJson& json, const JsonPlace& at);

}  // namespace gtpo::data::hf
