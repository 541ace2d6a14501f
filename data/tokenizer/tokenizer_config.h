// tokenizer_config.json, the transformers file beside tokenizer.json that names the special-token roles
// and holds the chat template. Reading: load_tokenizer applies it when present (roles override the
// content-based guess of special_tokens.h). Writing: write_tokenizer_config gives a file that
// transformers' AutoTokenizer.from_pretrained(DIR) accepts with tokenizer.json, producing gtpo's ids
// (tokenizer_class PreTrainedTokenizerFast, so no class-specific <s> is invented; see docs/tokenizers.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace gtpo::data {

class Tokenizer;

struct TokenizerConfig {
  // Role token contents. nullopt: the file does not name the role; "": the file says null (no such token).
  // A role may be written as a string or as an AddedToken object {"content": ...}.
  std::optional<std::string> bos_token, eos_token, pad_token, unk_token;
  // The chat template, "" when none. A list of named templates gives the one named "default".
  std::string chat_template;
  // Where the chat template came from ("DIR/tokenizer_config.json chat_template" or "DIR/chat_template.jinja"),
  // so that a template error names it.
  std::string chat_template_label;
  std::optional<bool> add_bos_token, add_eos_token;
  std::optional<int64_t> model_max_length;  // absent or transformers' "unlimited" sentinel: nullopt
  // "tokenizer_class", "" when absent or null; then config.json's "model_type" ("" when none), from which
  // AutoTokenizer picks the class instead (tokenizer_class.h: what the class changes).
  std::string tokenizer_class, model_type;
};

// Parses PATH; a missing file, bad JSON or a key of the wrong type is a gtpo::Error naming the file and key.
TokenizerConfig read_tokenizer_config(const std::string& path);
// The tokenizer configuration of a Hugging Face directory: DIR/tokenizer_config.json, with the template of
// DIR/chat_template.jinja (as newer transformers versions save it) taking the place of its "chat_template",
// and DIR/config.json's "model_type" when no tokenizer_class is named. nullopt when DIR has none of the three
// files. The one reader both load_tokenizer and the prompt renderer use.
std::optional<TokenizerConfig> read_tokenizer_config_in(const std::string& dir);

// The tokenizer_config.json text for `tok`: tokenizer_class PreTrainedTokenizerFast, or the loaded class when
// that class decides the added special tokens (with add_bos_token/add_eos_token spelled out, so that the copy
// encodes as `tok` does), its roles (bos/eos/pad as token contents, null when absent), its chat template when
// it has one, add_bos_token/add_eos_token when the loaded config had them, and model_max_length when given
// (or known from the loaded config).
std::string tokenizer_config_text(const Tokenizer& tok, std::optional<int64_t> model_max_length = std::nullopt);
// Writes it atomically to PATH (normally DIR/tokenizer_config.json, beside DIR/tokenizer.json).
void write_tokenizer_config(const Tokenizer& tok, const std::string& path,
                            std::optional<int64_t> model_max_length = std::nullopt);

}  // namespace gtpo::data
