#include "data/chat/prompt_format.h"

#include "data/chat/text_utils.h"
#include "runtime/error.h"

namespace gtpo::data::chat {

PromptFormat PromptFormat::from_pattern(std::string pattern, std::string key) {
  GTPO_CHECK(pattern.find("{prompt}") != std::string::npos, key, ": a prompt pattern must contain {prompt}, got '",
             pattern, "'");
  PromptFormat f;
  f.pattern_ = std::move(pattern);
  f.pattern_key_ = std::move(key);
  return f;
}

PromptFormat PromptFormat::from_template(ChatTemplateText chat_template, bool wrap_plain) {
  PromptFormat f;
  f.set_conversation_template(std::move(chat_template));
  f.wrap_plain_ = wrap_plain;
  return f;
}

void PromptFormat::set_conversation_template(ChatTemplateText chat_template) {
  compiled_ = std::make_shared<const Template>(chat_template.text, chat_template.label);  // syntax errors now
  template_ = std::move(chat_template);
}

std::string PromptFormat::plain(const std::string& prompt) const {
  if (pattern_) return replace_all(*pattern_, "{prompt}", prompt, -1);
  if (!wrap_plain_ || !compiled_) return prompt;
  return conversation({ChatMessage{"user", prompt, nlohmann::ordered_json::object()}}, "a plain prompt");
}

std::string PromptFormat::conversation(const std::vector<ChatMessage>& messages, const std::string& where) const {
  if (!compiled_) fail_no_chat_template(where);
  ChatInput in;
  in.messages = messages;
  in.add_generation_prompt = true;
  in.bos_token = template_.bos_token;
  in.eos_token = template_.eos_token;
  try {
    return render_chat(*compiled_, in);
  } catch (const gtpo::Error& e) {
    fail(where, ": rendering the conversation with ", template_.label, ": ", e.what());
  }
}

std::string PromptFormat::describe() const {
  std::string out = pattern_ ? "pattern " + *pattern_ : wrap_plain_ ? "chat template " + template_.label : "none";
  if (compiled_ && !wrap_plain_) out += " (conversations: chat template " + template_.label + ")";
  return out;
}

void fail_no_chat_template(const std::string& where) {
  fail(where, ": a conversational row needs a chat template: set prompt.template to a Jinja chat template file, or "
              "use a tokenizer whose tokenizer_config.json (or chat_template.jinja) has one");
}

}  // namespace gtpo::data::chat
