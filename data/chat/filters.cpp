#include "data/chat/filters.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "data/chat/methods.h"
#include "data/chat/python_format.h"
#include "data/chat/python_ops.h"
#include "data/chat/template_error.h"
#include "data/chat/text_utils.h"
#include "data/chat/value_tests.h"
#include "data/tokenizer/hf/unicode_text.h"
#include "data/tokenizer/utf8.h"

namespace gtpo::data::chat {

namespace {

using K = Value::Kind;

bool flag(const CallArgs& args, std::size_t index, const std::string& name, bool fallback) {
  const Value* v = args.get(index, name);
  return v ? truthy(*v) : fallback;
}

std::string text_arg(const CallArgs& args, std::size_t index, const std::string& name, const std::string& fallback) {
  const Value* v = args.get(index, name);
  return v ? to_str(*v) : fallback;
}

// attribute="a.b" or "0": jinja2's make_attrgetter (dots walk into items; digits index lists).
Value attribute_of(const Value& item, const std::string& path) {
  Value current = item;
  for (const std::string& part : split_on(path, ".", -1)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    current = digits ? subscript(current, Value::from_int(std::atoll(part.c_str())))
                     : subscript(current, Value::from_string(part));
    if (current.is_undefined()) return current;
  }
  return current;
}

std::string case_folded(const Value& v, bool case_sensitive) {
  return v.is_string() && !case_sensitive ? ascii_lower(v.text) : "";
}

// Key for sort/unique: strings lower-cased unless case_sensitive.
Value sort_key(const Value& item, const CallArgs& args, std::size_t attr_index, bool case_sensitive) {
  const Value* attribute = args.get(attr_index, "attribute");
  Value key = attribute && !attribute->is_none() ? attribute_of(item, to_str(*attribute)) : item;
  if (key.is_string() && !case_sensitive) key = Value::from_string(case_folded(key, false));
  return key;
}

Value select_items(const Value& seq, const CallArgs& args, bool by_attribute, bool keep) {
  CallArgs test_args;
  std::size_t first = 0;
  std::string attribute;
  if (by_attribute) {
    const Value* a = args.get(0, "attribute");
    if (!a) value_error(keep ? "selectattr" : "rejectattr", " needs an attribute name");
    attribute = to_str(*a);
    first = 1;
  }
  std::string test;
  if (first < args.positional.size()) test = to_str(args.positional[first]);
  for (std::size_t i = first + 1; i < args.positional.size(); ++i) test_args.positional.push_back(args.positional[i]);
  std::vector<Value> out;
  for (const Value& item : iterate(seq)) {
    const Value subject = by_attribute ? attribute_of(item, attribute) : item;
    const bool passes = test.empty() ? truthy(subject) : apply_test(test, subject, test_args);
    if (passes == keep) out.push_back(item);
  }
  return Value::from_list(std::move(out));
}

// Python's round(x, n): correctly rounded, ties to even on the exact binary value (glibc printf does both).
double python_round(double x, int64_t digits) {
  if (!std::isfinite(x) || digits > 300) return x;
  if (digits < -300) return 0.0 * x;
  if (digits < 0) {
    const double scale = std::pow(10.0, static_cast<double>(-digits));
    return std::nearbyint(x / scale) * scale;
  }
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(digits), x);
  return std::strtod(buf, nullptr);
}

std::string indent_text(const std::string& s_in, const std::string& indention, bool first, bool blank) {
  const std::vector<std::string> lines = split_lines(s_in + "\n");
  std::string rv;
  if (blank) {
    for (std::size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
  } else if (!lines.empty()) {
    rv = lines[0];
    for (std::size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : indention) + lines[i];
  }
  return first ? indention + rv : rv;
}

std::string jinja_title(const std::string& s) {
  // re.split(r"([-\s({\[<]+)") then item[0].upper() + item[1:].lower() for every piece.
  std::string out;
  bool at_word_start = true;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t space = space_at(s, i);
    const char c = s[i];
    if (space || c == '-' || c == '(' || c == '{' || c == '[' || c == '<') {
      const std::size_t n = space ? space : 1;
      out += s.substr(i, n);
      i += n;
      at_word_start = true;
      continue;
    }
    out += at_word_start ? ascii_upper(std::string(1, c)) : ascii_lower(std::string(1, c));
    at_word_start = false;
    ++i;
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// jinja2's int filter: int(value), else int(float(value)), else the default. Where Python would give an
// integer beyond 64 bits, or raise (int(inf)), this raises: never a silent 0.
Value float_to_int(double d, const Value& fallback) {
  if (std::isnan(d)) return fallback;  // int(nan) is a ValueError, which jinja2 turns into the default
  if (std::isinf(d)) value_error("int: cannot convert float infinity to integer");
  if (std::fabs(d) >= 9.223372036854775807e18)
    value_error("int: ", d, " does not fit a 64-bit integer (jinja2 would give a Python big integer)");
  return Value::from_int(static_cast<int64_t>(d));
}

// TEXT as Python's int(TEXT) (AS_FLOAT false) or float(TEXT) reads it, spelled for strtoll / strtod:
// surrounding whitespace stripped, Unicode decimal digits as ASCII ones, underscores only between digits
// (removed), float's inf / infinity / nan; nullopt for anything else (hex included: neither takes it).
std::optional<std::string> python_numeral(const std::string& text, bool as_float) {
  const std::string t = strip_right(strip_left(text));
  std::string s;
  for (std::size_t pos = 0; pos < t.size();) {
    char32_t cp = 0;
    if (!utf8_next(t, pos, cp)) return std::nullopt;
    const int digit = cp < 0x80 ? -1 : hf::decimal_digit(cp);
    if (cp >= 0x80 && digit < 0) return std::nullopt;
    s += cp < 0x80 ? static_cast<char>(cp) : static_cast<char>('0' + digit);
  }
  std::size_t i = s.empty() || (s[0] != '+' && s[0] != '-') ? 0 : 1;
  std::string out = s.substr(0, i);
  if (as_float) {
    const std::string word = ascii_lower(s.substr(i));
    if (word == "inf" || word == "infinity" || word == "nan") return s;
  }
  const auto is_digit = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  const auto digits = [&] {  // digit (_? digit)*
    if (!is_digit(i)) return false;
    while (is_digit(i) || (s[i] == '_' && is_digit(i + 1))) {
      if (s[i] != '_') out += s[i];
      ++i;
    }
    return true;
  };
  const bool whole = digits();
  if (as_float && i < s.size() && s[i] == '.') {
    out += s[i++];
    if (!digits() && !whole) return std::nullopt;
  } else if (!whole) {
    return std::nullopt;
  }
  if (as_float && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    out += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) out += s[i++];
    if (!digits()) return std::nullopt;
  }
  return i == s.size() ? std::optional<std::string>(out) : std::nullopt;
}

// jinja2's int filter: int(text, 10), else int(float(text)), else the default (a string's inf too).
Value to_int(const Value& v, const Value& fallback) {
  if (v.kind == K::Int) return v;
  if (v.kind == K::Bool) return Value::from_int(v.boolean);
  if (v.kind == K::Float) return float_to_int(v.number, fallback);
  if (!v.is_string()) return fallback;
  if (const auto digits = python_numeral(v.text, false)) {
    errno = 0;
    const long long i = std::strtoll(digits->c_str(), nullptr, 10);
    if (errno == ERANGE)
      value_error("int: '", *digits,
                  "' does not fit a 64-bit integer (jinja2 would give a Python big integer)");
    return Value::from_int(i);
  }
  const auto number = python_numeral(v.text, true);
  if (!number) return fallback;
  const double d = std::strtod(number->c_str(), nullptr);
  return std::isfinite(d) ? float_to_int(d, fallback) : fallback;
}

Value to_float(const Value& v, const Value& fallback) {
  if (v.is_number()) return Value::from_float(as_double(v));
  if (!v.is_string()) return fallback;
  const auto number = python_numeral(v.text, true);
  return number ? Value::from_float(std::strtod(number->c_str(), nullptr)) : fallback;
}

}  // namespace

void FilterLimits::charge(uint64_t n) const {
  if (steps == nullptr) return;
  *steps += n;
  if (*steps > max_steps)
    value_error("the template ran more than ", max_steps, " steps (RenderLimits::max_steps) in a filter");
}

namespace {

// Filters of one family (the string filters, tojson, length, default, first/last, join); nullopt when NAME is
// none of them.
std::optional<Value> text_and_default_filters(const std::string& name, const Value& v,
                                              [[maybe_unused]] const CallArgs& args,
                                              [[maybe_unused]] const FilterLimits& limits) {
  if (name == "safe" || name == "string" || name == "e" || name == "escape" || name == "trim" || name == "upper" ||
      name == "lower" || name == "capitalize" || name == "title") {
    if (name == "safe") return v;
    const std::string s = v.is_string() ? v.text : to_str(v);
    if (name == "string") return Value::from_string(s);
    if (name == "e" || name == "escape") return Value::from_string(html_escape(s));
    if (name == "trim") {
      const Value* chars = args.get(0, "chars");
      if (chars && chars->is_string()) return Value::from_string(strip_chars(s, chars->text, true, true));
      return Value::from_string(strip_right(strip_left(s)));
    }
    if (name == "upper") return Value::from_string(ascii_upper(s));
    if (name == "lower") return Value::from_string(ascii_lower(s));
    if (name == "title") return Value::from_string(jinja_title(s));
    std::string out = ascii_lower(s);
    if (!out.empty()) out = ascii_upper(out.substr(0, 1)) + out.substr(1);
    return Value::from_string(out);
  }
  if (name == "tojson") {
    // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
    JsonStyle style;
    style.ensure_ascii = flag(args, 0, "ensure_ascii", false);
    const Value* indent = args.get(1, "indent");
    if (indent && !indent->is_none()) {
      if (indent->kind != K::Int || indent->integer < 0 || indent->integer > 64)
        value_error("tojson: indent must be an integer from 0 to 64, got ", to_repr(*indent));
      style.indent = static_cast<int>(indent->integer);
    }
    const Value* separators = args.get(2, "separators");
    if (separators && !separators->is_none()) {
      if (separators->kind != K::List || separators->items().size() != 2 || !separators->items()[0].is_string() ||
          !separators->items()[1].is_string())
        value_error("tojson: separators must be a pair of strings, got ", to_repr(*separators));
      style.item_separator = separators->items()[0].text;
      style.key_separator = separators->items()[1].text;
    }
    style.sort_keys = flag(args, 3, "sort_keys", false);
    std::string json = to_json(v, style);
    if (json.size() > limits.max_bytes) value_error("tojson: output longer than the limit of ", limits.max_bytes, " bytes");
    return Value::from_string(std::move(json));
  }
  if (name == "length" || name == "count") return Value::from_int(static_cast<int64_t>(length(v)));
  if (name == "default" || name == "d") {
    const bool boolean = flag(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !truthy(v))) {
      const Value* fallback = args.get(0, "default_value");
      return fallback ? *fallback : Value::from_string("");
    }
    return v;
  }
  if (name == "first" || name == "last") {
    if (v.is_undefined()) value_error("'", v.text.empty() ? "value" : v.text, "' is undefined");
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    const std::string separator = text_arg(args, 0, "d", "");
    const Value* attribute = args.get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
      if (!first) out += separator;
      first = false;
      out += to_str(attribute && !attribute->is_none() ? attribute_of(item, to_str(*attribute)) : item);
      if (out.size() > limits.max_bytes) value_error("join: output longer than the limit of ", limits.max_bytes, " bytes");
    }
    return Value::from_string(std::move(out));
  }
  return std::nullopt;
}

// Filters of one family (list, items, replace, int, float, abs, round); nullopt when NAME is none of them.
std::optional<Value> conversion_filters(const std::string& name, const Value& v,
                                        [[maybe_unused]] const CallArgs& args,
                                        [[maybe_unused]] const FilterLimits& limits) {
  if (name == "list") return Value::from_list(iterate(v));
  if (name == "items") {
    if (v.is_undefined()) return Value::from_list({});
    if (v.kind != K::Dict) value_error("filter 'items' needs a mapping, got ", type_name(v));
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict->entries) out.push_back(Value::from_list({Value::from_string(k), val}, true));
    return Value::from_list(std::move(out));
  }
  if (name == "replace") {
    const std::string s = to_str(v);
    const Value* count = args.get(2, "count");
    long n = -1;
    if (count && !count->is_none()) {
      if (count->kind != K::Int) value_error("replace: count must be an integer");
      n = static_cast<long>(count->integer);
    }
    const std::string old_text = text_arg(args, 0, "old", ""), new_text = text_arg(args, 1, "new", "");
    if (!new_text.empty() && code_point_count(s) * new_text.size() > limits.max_bytes)
      value_error("replace: output longer than the limit");
    return Value::from_string(replace_all(s, old_text, new_text, n));
  }
  if (name == "int") {
    const Value* fallback = args.get(0, "default");
    return to_int(v, fallback ? *fallback : Value::from_int(0));
  }
  if (name == "float") {
    const Value* fallback = args.get(0, "default");
    return to_float(v, fallback ? *fallback : Value::from_float(0.0));
  }
  if (name == "abs") {
    if (v.kind == K::Int) {
      if (v.integer == INT64_MIN) value_error("integer overflow in abs");
      return Value::from_int(v.integer < 0 ? -v.integer : v.integer);
    }
    if (v.kind == K::Bool) return Value::from_int(v.boolean);
    if (v.kind == K::Float) return Value::from_float(std::fabs(v.number));
    value_error("bad operand type for abs(): '", type_name(v), "'");
  }
  if (name == "round") {
    if (!v.is_number()) value_error("filter 'round' needs a number, got ", type_name(v));
    const Value* precision = args.get(0, "precision");
    const int64_t digits = precision && precision->kind == K::Int ? precision->integer : 0;
    const std::string method = text_arg(args, 1, "method", "common");
    const double x = as_double(v);
    if (method == "common") {
      if (v.kind == K::Int && digits >= 0) return v;  // Python's round(int, n) keeps the int
      return Value::from_float(python_round(x, digits));
    }
    if (method != "ceil" && method != "floor") value_error("round: method must be common, ceil or floor");
    const double scale = std::pow(10.0, static_cast<double>(digits));
    return Value::from_float((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
  }
  return std::nullopt;
}

// Filters of one family (reverse, sort, unique, map); nullopt when NAME is none of them.
std::optional<Value> ordering_filters(const std::string& name, const Value& v,
                                      [[maybe_unused]] const CallArgs& args,
                                      [[maybe_unused]] const FilterLimits& limits) {
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string> pieces = code_points(v.text);
      std::string out;
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) out += *it;
      return Value::from_string(out);
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::from_list(std::move(items));
  }
  if (name == "sort") {
    const bool reverse = flag(args, 0, "reverse", false);
    const bool case_sensitive = flag(args, 1, "case_sensitive", false);
    std::vector<Value> items = iterate(v);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) keyed.emplace_back(sort_key(item, args, 2, case_sensitive), std::move(item));
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return reverse ? less(b.first, a.first) : less(a.first, b.first);
    });
    std::vector<Value> out;
    for (auto& [key, item] : keyed) out.push_back(std::move(item));
    return Value::from_list(std::move(out));
  }
  if (name == "unique") {
    const bool case_sensitive = flag(args, 0, "case_sensitive", false);
    std::vector<Value> out, seen;
    for (const Value& item : iterate(v)) {
      const Value key = sort_key(item, args, 1, case_sensitive);
      limits.charge(seen.size());  // one comparison per item seen: quadratic work counts as such
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
        seen.push_back(key);
        out.push_back(item);
      }
    }
    return Value::from_list(std::move(out));
  }
  if (name == "map") {
    std::vector<Value> out;
    for (const auto& [k, val] : args.keyword)
      if (k == "attribute") {
        const Value* fallback = args.get(99, "default");
        for (const Value& item : iterate(v)) {
          Value got = attribute_of(item, to_str(val));
          out.push_back(got.is_undefined() && fallback ? *fallback : got);
        }
        return Value::from_list(std::move(out));
      }
    if (args.positional.empty()) value_error("map needs a filter name or attribute=");
    const std::string filter = to_str(args.positional[0]);
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keyword = args.keyword;
    for (const Value& item : iterate(v)) out.push_back(apply_filter(filter, item, rest, limits));
    return Value::from_list(std::move(out));
  }
  return std::nullopt;
}

// Filters of one family (select/reject(attr), indent, sum, min/max, attr, dictsort); nullopt when NAME is
// none of them.
std::optional<Value> selection_filters(const std::string& name, const Value& v,
                                       [[maybe_unused]] const CallArgs& args,
                                       [[maybe_unused]] const FilterLimits& limits) {
  if (name == "selectattr") return select_items(v, args, true, true);
  if (name == "rejectattr") return select_items(v, args, true, false);
  if (name == "select") return select_items(v, args, false, true);
  if (name == "reject") return select_items(v, args, false, false);
  if (name == "indent") {
    const Value* width = args.get(0, "width");
    std::string indention = "    ";
    if (width && width->is_string()) indention = width->text;
    else if (width && width->kind == K::Int) {
      if (width->integer < 0 || width->integer > 1024) value_error("indent: width must be from 0 to 1024");
      indention = std::string(static_cast<std::size_t>(width->integer), ' ');
    }
    const std::string s = to_str(v);
    if (indention.size() * (split_lines(s).size() + 1) + s.size() > limits.max_bytes)
      value_error("indent: output longer than the limit");
    return Value::from_string(indent_text(s, indention, flag(args, 1, "first", false), flag(args, 2, "blank", false)));
  }
  if (name == "sum") {
    const Value* attribute = args.get(0, "attribute");
    const Value* start = args.get(1, "start");
    Value total = start ? *start : Value::from_int(0);
    for (const Value& item : iterate(v))
      total = arithmetic("+", total, attribute && !attribute->is_none() ? attribute_of(item, to_str(*attribute)) : item,
                         limits.max_bytes);
    return total;
  }
  if (name == "min" || name == "max") {
    const bool case_sensitive = flag(args, 0, "case_sensitive", false);
    const std::vector<Value> items = iterate(v);
    if (items.empty()) return Value::undefined();
    std::size_t best = 0;
    for (std::size_t i = 1; i < items.size(); ++i) {
      const Value a = sort_key(items[i], args, 1, case_sensitive), b = sort_key(items[best], args, 1, case_sensitive);
      if (name == "min" ? less(a, b) : less(b, a)) best = i;
    }
    return items[best];
  }
  if (name == "attr") {  // getattr only: a dict's keys are not attributes (a namespace's are)
    const std::string attribute = text_arg(args, 0, "name", "");
    if (v.kind == K::Namespace || v.kind == K::Undefined) return get_attribute(v, attribute);
    if (auto method = bound_method(v, attribute)) return *method;
    return Value::undefined(attribute);
  }
  if (name == "dictsort") {
    if (v.kind != K::Dict) value_error("filter 'dictsort' needs a mapping, got ", type_name(v));
    auto entries = v.dict->entries;
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return ascii_lower(a.first) < ascii_lower(b.first); });
    std::vector<Value> out;
    for (auto& [k, val] : entries) out.push_back(Value::from_list({Value::from_string(k), val}, true));
    return Value::from_list(std::move(out));
  }
  return std::nullopt;
}

}  // namespace

Value apply_filter(const std::string& name, const Value& v, const CallArgs& args,
                   const FilterLimits& limits) {
  // Every filter pays for what it walks: the items of a list or mapping, the bytes of a string.
  if (v.kind == K::List && v.list) limits.charge(v.list->items.size());
  if (v.kind == K::Dict && v.dict) limits.charge(v.dict->entries.size());
  if (v.is_string()) limits.charge(v.text.size() / 64);
  for (const auto family :
       {text_and_default_filters, conversion_filters, ordering_filters, selection_filters})
    if (std::optional<Value> out = family(name, v, args, limits)) return *std::move(out);
  value_error("no filter named '", name, "'");
}

}  // namespace gtpo::data::chat
