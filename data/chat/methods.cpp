#include "data/chat/methods.h"

#include "data/chat/python_format.h"
#include "data/chat/python_ops.h"
#include "data/chat/template_error.h"
#include "data/chat/text_utils.h"

namespace gtpo::data::chat {

namespace {

std::string string_arg(const CallArgs& args, std::size_t index, const std::string& name, const std::string& method) {
  const Value* v = args.get(index, name);
  if (!v) value_error(method, "() missing argument '", name, "'");
  if (!v->is_string()) value_error(method, "() argument '", name, "' must be str, not ", type_name(*v));
  return v->text;
}

long int_arg(const CallArgs& args, std::size_t index, const std::string& name, long fallback) {
  const Value* v = args.get(index, name);
  if (!v || v->is_none()) return fallback;
  if (v->kind != Value::Kind::Int) value_error("argument '", name, "' must be an integer, not ", type_name(*v));
  return static_cast<long>(v->integer);
}

Value strings(const std::vector<std::string>& pieces) {
  std::vector<Value> out;
  for (const std::string& p : pieces) out.push_back(Value::from_string(p));
  return Value::from_list(std::move(out));
}

// Python's str.title(): a letter after a non-letter is upper-cased, other letters lower-cased (ASCII).
std::string python_title(const std::string& s) {
  std::string out = s;
  bool previous_cased = false;
  for (char& c : out) {
    const bool upper = c >= 'A' && c <= 'Z', lower = c >= 'a' && c <= 'z';
    if (upper || lower) {
      if (previous_cased && upper) c = static_cast<char>(c - 'A' + 'a');
      if (!previous_cased && lower) c = static_cast<char>(c - 'a' + 'A');
      previous_cased = true;
    } else {
      previous_cased = false;
    }
  }
  return out;
}

bool affix_matches(const Value& affix, const std::string& text, bool prefix, const std::string& method) {
  const auto one = [&](const Value& v) {
    if (!v.is_string()) value_error(method, "() argument must be str or a tuple of str, not ", type_name(v));
    return prefix ? text.starts_with(v.text) : text.ends_with(v.text);
  };
  if (affix.kind == Value::Kind::List) {
    for (const Value& v : affix.items())
      if (one(v)) return true;
    return false;
  }
  return one(affix);
}

std::optional<Value> string_method(const Value& object, const std::string& name) {
  const std::string s = object.text;
  const auto make = [](auto body) { return Value::from_function([body](CallArgs& args, int) { return body(args); }); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip", right = name != "lstrip";
    return make([s, left, right](CallArgs& args) {
      const Value* chars = args.get(0, "chars");
      if (chars && chars->is_string()) return Value::from_string(strip_chars(s, chars->text, left, right));
      std::string out = s;
      if (left) out = strip_left(out);
      if (right) out = strip_right(out);
      return Value::from_string(out);
    });
  }
  if (name == "upper") return make([s](CallArgs&) { return Value::from_string(ascii_upper(s)); });
  if (name == "lower") return make([s](CallArgs&) { return Value::from_string(ascii_lower(s)); });
  if (name == "title") return make([s](CallArgs&) { return Value::from_string(python_title(s)); });
  if (name == "capitalize")
    return make([s](CallArgs&) {
      std::string out = ascii_lower(s);
      if (!out.empty()) out = ascii_upper(out.substr(0, 1)) + out.substr(1);
      return Value::from_string(out);
    });
  if (name == "split" || name == "rsplit")
    return make([s](CallArgs& args) {
      const Value* sep = args.get(0, "sep");
      const long maxsplit = int_arg(args, 1, "maxsplit", -1);
      if (!sep || sep->is_none()) return strings(split_whitespace(s, maxsplit));
      if (!sep->is_string()) value_error("split() separator must be str, not ", type_name(*sep));
      if (sep->text.empty()) value_error("split(): empty separator");
      return strings(split_on(s, sep->text, maxsplit));
    });
  if (name == "splitlines") return make([s](CallArgs&) { return strings(split_lines(s)); });
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return make([s, prefix, name](CallArgs& args) {
      const Value* affix = args.get(0, "prefix");
      if (!affix) value_error(name, "() takes at least 1 argument");
      return Value::from_bool(affix_matches(*affix, s, prefix, name));
    });
  }
  if (name == "replace")
    return make([s](CallArgs& args) {
      return Value::from_string(replace_all(s, string_arg(args, 0, "old", "replace"),
                                            string_arg(args, 1, "new", "replace"), int_arg(args, 2, "count", -1)));
    });
  if (name == "find")
    return make([s](CallArgs& args) {
      const std::size_t at = find_text(s, string_arg(args, 0, "sub", "find"));
      return Value::from_int(at == std::string::npos ? -1 : static_cast<int64_t>(code_point_count(s.substr(0, at))));
    });
  if (name == "count")
    return make([s](CallArgs& args) {
      const std::string sub = string_arg(args, 0, "sub", "count");
      if (sub.empty()) return Value::from_int(static_cast<int64_t>(code_point_count(s) + 1));
      int64_t n = 0;
      for (std::size_t at = find_text(s, sub); at != std::string::npos;
           at = find_text(s, sub, at + sub.size()))
        ++n;
      return Value::from_int(n);
    });
  if (name == "join")
    return make([s](CallArgs& args) {
      const Value* items = args.get(0, "iterable");
      if (!items) value_error("join() takes exactly one argument");
      std::string out;
      bool first = true;
      for (const Value& v : iterate(*items)) {
        if (!v.is_string()) value_error("sequence item: expected str instance, ", type_name(v), " found");
        if (!first) out += s;
        first = false;
        out += v.text;
      }
      return Value::from_string(out);
    });
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& object, const std::string& name) {
  const std::shared_ptr<DictData> dict = object.dict;
  if (name == "items")
    return Value::from_function([dict](CallArgs&, int) {
      std::vector<Value> out;
      for (const auto& [k, v] : dict->entries) out.push_back(Value::from_list({Value::from_string(k), v}, true));
      return Value::from_list(std::move(out));
    });
  if (name == "keys")
    return Value::from_function([dict](CallArgs&, int) {
      std::vector<Value> out;
      for (const auto& entry : dict->entries) out.push_back(Value::from_string(entry.first));
      return Value::from_list(std::move(out));
    });
  if (name == "values")
    return Value::from_function([dict](CallArgs&, int) {
      std::vector<Value> out;
      for (const auto& entry : dict->entries) out.push_back(entry.second);
      return Value::from_list(std::move(out));
    });
  if (name == "get")
    return Value::from_function([dict](CallArgs& args, int) {
      const Value* key = args.get(0, "key");
      if (!key) value_error("get() takes at least 1 argument");
      const Value* fallback = args.get(1, "default");
      if (key->is_string())
        if (const Value* v = dict->find(key->text)) return *v;
      return fallback ? *fallback : Value::none();
    });
  return std::nullopt;
}

}  // namespace

std::optional<Value> bound_method(const Value& object, const std::string& name) {
  if (object.is_string()) return string_method(object, name);
  if (object.kind == Value::Kind::Dict) return dict_method(object, name);
  return std::nullopt;
}

}  // namespace gtpo::data::chat
