// Which chat template (or pattern) turns a run's prompts into model text: the prompt section's row and
// the one function that decides (docs/chat-templates.md "How prompts are rendered").
#pragma once
#include <string>

#include "data/chat/prompt_format.h"
#include "rl/run_config.h"

namespace gtpo::rl {

// The directory that holds the run's tokenizer files: train.init_from, else tokenizer.file's folder (kind
// file), else "" (char and byte tokenizers have no chat template).
std::string tokenizer_dir_of(const RunConfig& config);

// The prompt.template value that means "the tokenizer's own chat template, for plain prompts too".
inline constexpr const char* kTokenizerTemplate = "tokenizer";

// THE function that returns the prompt format to use:
//   prompt.template is "tokenizer"    -> the tokenizer's chat template for every prompt (plain ones as one user
//                                        turn); an error when the tokenizer has none
//   prompt.template holds "{prompt}"  -> that pattern for plain prompts (conversations: the tokenizer's template)
//   prompt.template names a file      -> that Jinja chat template for every prompt (plain ones as one user turn)
//   prompt.template empty             -> plain prompts as they are; conversational rows use the chat template
//                                        found beside the tokenizer (chat_template.jinja, or tokenizer_config.json's
//                                        "chat_template"), whose bos/eos tokens the template also gets.
// The tokenizer's template is read from TOKENIZER_DIR by data::read_tokenizer_config_in, the reader
// load_tokenizer uses, so it is the one Tokenizer::chat_template() returns.
data::chat::PromptFormat prompt_format(const std::string& prompt_template, const std::string& tokenizer_dir);
data::chat::PromptFormat prompt_format_for_run(const RunConfig& config);

}  // namespace gtpo::rl
