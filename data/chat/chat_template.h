// Chat templates (Hugging Face's tokenizer_config.json "chat_template"): a conversation rendered to the
// prompt text the model was trained on, with the variables transformers' apply_chat_template passes
// (messages, tools, documents, add_generation_prompt, bos_token, eos_token, ...) and its globals
// (raise_exception, strftime_now) and tojson. Byte-identical to transformers 4.45 on the fixtures in
// tests/fixtures/chat_templates/ (scripts/reference/chat_templates.py); docs/chat-templates.md.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/chat/template.h"

namespace gtpo::data::chat {

struct ChatMessage {
  std::string role;
  std::optional<std::string> content;  // absent: the template sees message.content undefined
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // other keys (tool_calls, name, ...)
};

// strftime_now renders this instant, not the wall clock, so prompts (and training runs) are reproducible:
// 2024-07-26 00:00:00 UTC, the date Llama 3.1's template itself falls back to.
inline constexpr int64_t kDefaultChatTime = 1721952000;

struct ChatInput {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token, eos_token;  // unset: undefined in the template
  std::optional<nlohmann::ordered_json> tools;      // unset: None, as apply_chat_template(tools=None)
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more variables by name
  int64_t time_utc = kDefaultChatTime;              // what strftime_now formats (seconds since 1970, UTC)
};

// Renders TEMPLATE_TEXT (LABEL names it in errors) with IN. Errors: gtpo::Error "LABEL:LINE: ...".
std::string render_chat(const std::string& template_text, const std::string& label, const ChatInput& in,
                        const RenderLimits& limits = {});
// Same with a template parsed once (datasets render many conversations with one template).
std::string render_chat(const Template& compiled, const ChatInput& in, const RenderLimits& limits = {});

// A JSON array of {"role": ..., "content": ...} objects (other keys kept in ChatMessage::extra) as messages.
// WHERE prefixes errors ("data.jsonl:3: field 'messages'"): not an array, an item not an object, a missing
// or non-string role, a content that is neither a string nor null/absent.
std::vector<ChatMessage> messages_from_json(const nlohmann::ordered_json& array, const std::string& where);

// JSON to a template value (objects keep their key order, as Python dicts do: hence ordered_json);
// nesting deeper than kMaxValueDepth is an error.
Value value_from_json(const nlohmann::ordered_json& json);

}  // namespace gtpo::data::chat
