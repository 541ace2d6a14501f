#include "rl/prompt_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "rl/run_config_schema.h"
#include "runtime/error.h"

namespace gtpo::rl {

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  GTPO_CHECK(in.good(), what, ": cannot read '", path.string(), "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// tokenizer_config.json writes a special token as a string or as an AddedToken object {"content": ...}.
std::optional<std::string> special_token(const nlohmann::json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  return std::nullopt;
}

// The chat template stored beside a tokenizer (as save_pretrained writes it), with its special tokens.
// TODO(issue 12, tokenizers): take these from data::Tokenizer::chat_template() once it exists.
std::optional<data::chat::ChatTemplateText> chat_template_beside_tokenizer(const std::string& dir) {
  if (dir.empty()) return std::nullopt;
  data::chat::ChatTemplateText t;
  const fs::path config_path = fs::path(dir) / "tokenizer_config.json";
  nlohmann::json config = nlohmann::json::object();
  if (fs::exists(config_path)) {
    try {
      config = nlohmann::json::parse(read_file(config_path, "tokenizer_config.json"));
    } catch (const nlohmann::json::exception& e) {
      fail(config_path.string(), ": invalid JSON: ", e.what());
    }
    GTPO_CHECK(config.is_object(), config_path.string(), ": expected a JSON object");
    t.bos_token = special_token(config, "bos_token");
    t.eos_token = special_token(config, "eos_token");
  }
  const fs::path jinja_path = fs::path(dir) / "chat_template.jinja";
  if (fs::exists(jinja_path)) {
    t.text = read_file(jinja_path, "chat template");
    t.label = jinja_path.string();
    return t;
  }
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::nullopt;
  t.label = config_path.string() + " chat_template";
  if (it->is_string()) {
    t.text = it->get<std::string>();
    return t;
  }
  // Several named templates ([{"name": "default", "template": ...}, {"name": "tool_use", ...}]): the default.
  if (it->is_array())
    for (const auto& named : *it)
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string()) {
        t.text = named["template"].get<std::string>();
        return t;
      }
  fail(config_path.string(), ": 'chat_template' must be a string or a list with a template named \"default\"");
}

}  // namespace

std::string tokenizer_dir_of(const RunConfig& c) {
  if (!c.train.init_from.empty()) return c.train.init_from;
  if (c.tokenizer.kind == TokenizerKind::File && !c.tokenizer.file.empty())
    return fs::path(c.tokenizer.file).parent_path().string();
  return "";
}

data::chat::PromptFormat prompt_format(const std::string& prompt_template, const std::string& tokenizer_dir) {
  const auto beside = chat_template_beside_tokenizer(tokenizer_dir);
  if (prompt_template.empty()) {
    return beside ? data::chat::PromptFormat::from_template(*beside, /*wrap_plain=*/false) : data::chat::PromptFormat{};
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
                        "a Jinja chat template file rendering every prompt (plain ones as one user turn), or a pattern "
                        "with {prompt}; empty = prompts as they are (conversational rows use the tokenizer's "
                        "chat template)")};
}

}  // namespace gtpo::rl
