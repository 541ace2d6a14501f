#include "rl/prompt_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/tokenizer/tokenizer_config.h"
#include "rl/run_config_schema.h"
#include "runtime/error.h"
#include "runtime/io/input_file.h"

namespace gtpo::rl {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path, const std::string& what) {
  io::check_input_file(path.string(), io::kMaxConfigBytes, what);
  std::ifstream in(path, std::ios::binary);
  GTPO_CHECK(in.good(), what, ": cannot read '", path.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// tokenizer_config.json's "null" role is "" there; the template then gets no such variable.
std::optional<std::string> role_token(const std::optional<std::string>& role) {
  return role && !role->empty() ? role : std::nullopt;
}

// The chat template stored beside a tokenizer, read as data::load_tokenizer reads it (so it is the template
// Tokenizer::chat_template() gives), with its special tokens. Reading only the small config files here lets
// the prompts be rendered before the tokenizer exists (a char tokenizer is built from the rendered prompts).
std::optional<data::chat::ChatTemplateText> chat_template_beside_tokenizer(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  const std::optional<data::TokenizerConfig> config = data::read_tokenizer_config_in(dir);
  if (!config || config->chat_template.empty()) return std::nullopt;
  data::chat::ChatTemplateText t;
  t.text = config->chat_template;
  t.label = config->chat_template_label;
  t.bos_token = role_token(config->bos_token);
  t.eos_token = role_token(config->eos_token);
  return t;
}

}  // namespace

std::string tokenizer_dir_of(const RunConfig& c) {
  if (!c.train.init_from.empty()) return c.train.init_from;
  if (c.tokenizer.kind == TokenizerKind::File && !c.tokenizer.file.empty()) {
    std::error_code ec;
    if (fs::is_directory(c.tokenizer.file, ec)) return c.tokenizer.file;
    return fs::path(c.tokenizer.file).parent_path().string();
  }
  return "";
}

data::chat::PromptFormat prompt_format(const std::string& prompt_template, const std::string& tokenizer_dir) {
  const auto beside = chat_template_beside_tokenizer(tokenizer_dir);
  if (prompt_template.empty()) {
    return beside ? data::chat::PromptFormat::from_template(*beside, /*wrap_plain=*/false) : data::chat::PromptFormat{};
  }
  if (prompt_template == kTokenizerTemplate) {
    GTPO_CHECK(beside.has_value(), "prompt.template: 'tokenizer' asks for the tokenizer's chat template, but ",
               tokenizer_dir.empty() ? std::string("this run's tokenizer (char or byte) has none")
                                     : "'" + tokenizer_dir + "' has neither tokenizer_config.json \"chat_template\" nor chat_template.jinja");
    return data::chat::PromptFormat::from_template(*beside, /*wrap_plain=*/true);
  }
  if (prompt_template.find("{prompt}") != std::string::npos) {
    data::chat::PromptFormat format = data::chat::PromptFormat::from_pattern(prompt_template, "prompt.template");
    if (beside) format.set_conversation_template(*beside);
    return format;
  }
  GTPO_CHECK(fs::is_regular_file(prompt_template), "prompt.template: '", prompt_template,
             "' is neither a readable Jinja chat template file nor a pattern containing {prompt}");
  data::chat::ChatTemplateText t;
  t.text = read_file(prompt_template, "prompt.template");
  t.label = prompt_template;
  if (beside) {
    t.bos_token = beside->bos_token;
    t.eos_token = beside->eos_token;
  }
  return data::chat::PromptFormat::from_template(std::move(t), /*wrap_plain=*/true);
}

data::chat::PromptFormat prompt_format_for_run(const RunConfig& c) {
  return prompt_format(c.prompt.template_path_or_pattern, tokenizer_dir_of(c));
}

// The prompt section: read by prompt_format_for_run above.
std::vector<RunKey> schema::prompt_keys() {
  return {config::field("prompt", "template", &RunConfig::prompt, &PromptSection::template_path_or_pattern,
                        config::text(),
                        "tokenizer = the tokenizer's chat template for every prompt (plain ones as one user turn); a "
                        "Jinja chat template file, likewise; or a pattern with {prompt}; empty = plain prompts as they "
                        "are (conversational rows use the tokenizer's chat template)")};
}

}  // namespace gtpo::rl
