// Chat templates (data/chat/): the input is a Jinja template, a separator line "---", then the conversation:
// a JSON array of {"role", "content"} messages, or plain lines ("ROLE: text", or text for a user turn).
// It renders with and without the generation prompt under tight limits; every outcome is a render or a
// gtpo::Error (syntax, type, undefined, limits), never a crash, a hang or another exception.
#include "data/chat/chat_template.h"
#include "tests/fuzz/fuzz_common.h"

namespace {

std::vector<gtpo::data::chat::ChatMessage> conversation(const std::string& text) {
  using gtpo::data::chat::ChatMessage;
  if (!text.empty() && text[0] == '[') {
    nlohmann::ordered_json json;
    try {
      json = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw gtpo::Error(std::string("messages: ") + e.what());  // the JSON reader's own errors: not the subject
    }
    return gtpo::data::chat::messages_from_json(json, "fuzz");
  }
  std::vector<ChatMessage> out;
  for (const std::string& line : gtpo::fuzz::split(text, '\n')) {
    if (line.empty()) continue;
    const std::size_t colon = line.find(": ");
    if (colon != std::string::npos && colon < 16)
      out.push_back({line.substr(0, colon), line.substr(colon + 2), nlohmann::ordered_json::object()});
    else
      out.push_back({"user", line, nlohmann::ordered_json::object()});
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::size_t sep = text.find("\n---\n");
  const std::string source = text.substr(0, sep);
  const std::string rest = sep == std::string::npos ? "" : text.substr(sep + 5);
  return gtpo::fuzz::run_one([&] {
    gtpo::data::chat::RenderLimits limits;
    limits.max_steps = 200000;
    limits.max_output_bytes = 1 << 20;
    limits.max_string_bytes = 16 << 20;
    const gtpo::data::chat::Template compiled(source, "fuzz.jinja");
    gtpo::data::chat::ChatInput in;
    in.messages = conversation(rest);
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    for (const bool generation_prompt : {false, true}) {
      in.add_generation_prompt = generation_prompt;
      const std::string out = gtpo::data::chat::render_chat(compiled, in, limits);
      if (out.size() > limits.max_output_bytes) std::abort();  // the limit holds
    }
  });
}
