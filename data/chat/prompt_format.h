// How a problem's prompt becomes the text the model sees: as it is (the default), through a "{prompt}"
// pattern, or through a Jinja chat template. Conversational rows ({"messages": [...]} or TRL's
// conversational "prompt": [...]) need a chat template; plain prompts are wrapped as one user message only
// when the template was asked for explicitly (prompt.template), never by merely having a tokenizer with one.
// Rendering adds the generation prompt, as TRL does for RL prompts.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/chat/chat_template.h"

namespace gtpo::data::chat {

// A chat template's text with the special tokens its tokenizer gives it, and where it came from.
struct ChatTemplateText {
  std::string text;
  std::string label;  // the file (or "FILE: chat_template") errors name
  std::optional<std::string> bos_token, eos_token;
};

class PromptFormat {
 public:
  PromptFormat() = default;  // prompts as they are; conversational rows are an error

  // PATTERN holds "{prompt}" (each occurrence is replaced); KEY names the setting in messages.
  static PromptFormat from_pattern(std::string pattern, std::string key);
  // WRAP_PLAIN: plain prompts become one user message (prompt.template); otherwise they stay as they are.
  static PromptFormat from_template(ChatTemplateText chat_template, bool wrap_plain);
  // A pattern for plain prompts plus a template (the tokenizer's) for conversational rows.
  void set_conversation_template(ChatTemplateText chat_template);

  std::string plain(const std::string& prompt) const;
  // WHERE ("data.jsonl:3") names the row in errors.
  std::string conversation(const std::vector<ChatMessage>& messages, const std::string& where) const;
  bool has_template() const { return compiled_ != nullptr; }
  // Whether plain() changes a prompt at all (a pattern, or a template asked for by prompt.template).
  bool transforms_plain() const { return pattern_.has_value() || (wrap_plain_ && compiled_); }
  // "none", "pattern ...", "chat template FILE": for logs.
  std::string describe() const;

 private:
  std::optional<std::string> pattern_;
  std::string pattern_key_;
  std::shared_ptr<const Template> compiled_;
  ChatTemplateText template_;
  bool wrap_plain_ = false;
};

// The error when a conversational row meets a format without a template: names the row and prompt.template.
[[noreturn]] void fail_no_chat_template(const std::string& where);

}  // namespace gtpo::data::chat
