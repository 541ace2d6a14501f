#include "data/chat/chat_template.h"

#include <ctime>

#include "data/chat/python_format.h"
#include "data/chat/template_error.h"

namespace gtpo::data::chat {

namespace {

Value json_to_value(const nlohmann::ordered_json& j, std::size_t depth) {
  if (depth > kMaxValueDepth) value_error("JSON nested deeper than ", kMaxValueDepth, " levels");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::from_bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::from_int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::from_float(static_cast<double>(u));
      return Value::from_int(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::from_float(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::from_string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& item : j) items.push_back(json_to_value(item, depth + 1));
      return Value::from_list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      std::vector<std::pair<std::string, Value>> items;
      for (auto it = j.begin(); it != j.end(); ++it) items.emplace_back(it.key(), json_to_value(it.value(), depth + 1));
      return Value::from_dict(std::move(items));
    }
    default: value_error("JSON value of type ", j.type_name(), " has no template value");
  }
}

Value message_value(const ChatMessage& m) {
  std::vector<std::pair<std::string, Value>> fields;
  fields.emplace_back("role", Value::from_string(m.role));
  if (m.content) fields.emplace_back("content", Value::from_string(*m.content));
  if (m.extra.is_object())
    for (auto it = m.extra.begin(); it != m.extra.end(); ++it)
      if (it.key() != "role" && (it.key() != "content" || !m.content))
        fields.emplace_back(it.key(), json_to_value(it.value(), 1));
  return Value::from_dict(std::move(fields));
}

Function strftime_now(int64_t time_utc) {
  return [time_utc](CallArgs& args, int) {
    const Value* format = args.get(0, "format");
    if (!format || !format->is_string()) value_error("strftime_now expects a format string");
    if (format->text.size() > 256) value_error("strftime_now: format longer than 256 characters");
    const std::time_t t = static_cast<std::time_t>(time_utc);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[4096];
    const std::size_t n = std::strftime(buf, sizeof buf, format->text.c_str(), &tm);
    if (n == 0 && !format->text.empty() && format->text.find('%') != std::string::npos)
      value_error("strftime_now: the format produced nothing or too much");
    return Value::from_string(std::string(buf, n));
  };
}

Value raise_exception(CallArgs& args, int) {
  const Value* message = args.get(0, "message");
  throw ValueError("raise_exception: " + (message ? to_str(*message) : std::string()));
}

}  // namespace

Value value_from_json(const nlohmann::ordered_json& json) { return json_to_value(json, 1); }

std::vector<ChatMessage> messages_from_json(const nlohmann::ordered_json& array, const std::string& where) {
  if (!array.is_array()) fail(where, ": expected an array of messages, got ", array.type_name());
  std::vector<ChatMessage> out;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const nlohmann::ordered_json& item = array[i];
    if (!item.is_object()) fail(where, ": message ", i, " is not an object (", item.type_name(), ")");
    const auto role = item.find("role");
    if (role == item.end() || !role->is_string()) fail(where, ": message ", i, " needs a string 'role'");
    ChatMessage m;
    m.role = role->get<std::string>();
    const auto content = item.find("content");
    if (content != item.end() && !content->is_null()) {
      if (!content->is_string())
        fail(where, ": message ", i, ": 'content' must be a string (got ", content->type_name(), ")");
      m.content = content->get<std::string>();
    } else if (content != item.end()) {
      m.extra["content"] = nullptr;  // present but null: the template sees None, not undefined
    }
    for (auto it = item.begin(); it != item.end(); ++it)
      if (it.key() != "role" && it.key() != "content") m.extra[it.key()] = it.value();
    out.push_back(std::move(m));
  }
  return out;
}

std::string render_chat(const Template& compiled, const ChatInput& in, const RenderLimits& limits) {
  Variables vars;
  std::vector<Value> messages;
  try {
    for (const ChatMessage& m : in.messages) messages.push_back(message_value(m));
    vars.emplace_back("messages", Value::from_list(std::move(messages)));
    vars.emplace_back("tools", in.tools ? value_from_json(*in.tools) : Value::none());
    vars.emplace_back("documents", Value::none());
    vars.emplace_back("add_generation_prompt", Value::from_bool(in.add_generation_prompt));
    if (in.bos_token) vars.emplace_back("bos_token", Value::from_string(*in.bos_token));
    if (in.eos_token) vars.emplace_back("eos_token", Value::from_string(*in.eos_token));
    if (in.extra.is_object())
      for (auto it = in.extra.begin(); it != in.extra.end(); ++it) vars.emplace_back(it.key(), value_from_json(it.value()));
  } catch (const ValueError& e) {
    fail(compiled.label(), ": the conversation: ", e.what());
  }
  vars.emplace_back("raise_exception", Value::from_function(raise_exception));
  vars.emplace_back("strftime_now", Value::from_function(strftime_now(in.time_utc)));
  return compiled.render(vars, limits);
}

std::string render_chat(const std::string& template_text, const std::string& label, const ChatInput& in,
                        const RenderLimits& limits) {
  return render_chat(Template(template_text, label), in, limits);
}

}  // namespace gtpo::data::chat
