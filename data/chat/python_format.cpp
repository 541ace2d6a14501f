#include "data/chat/python_format.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "data/chat/template_error.h"

namespace gtpo::data::chat {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest digits that read back as the same double, then Python's layout (repr style 'r').
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  const bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  const std::size_t e = s.find('e');
  const int exponent = std::atoi(s.c_str() + e + 1);
  std::string digits;
  for (std::size_t i = 0; i < e; ++i)
    if (s[i] != '.') digits += s[i];
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += ebuf;
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const std::size_t int_len = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= int_len) out = digits + std::string(int_len - digits.size(), '0') + ".0";
    else out = digits.substr(0, int_len) + "." + digits.substr(int_len);
  }
  return negative ? "-" + out : out;
}

namespace {

std::string string_repr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (const unsigned char c : s) {
    if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += static_cast<char>(c);
  }
  return out + quote;
}

void json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default: {
        char buf[16];
        if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else if (ensure_ascii && c >= 0x80) {
          // One UTF-8 sequence to \uXXXX (a surrogate pair above U+FFFF), as json.dumps(ensure_ascii=True).
          const std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
          uint32_t cp = n == 4 ? c & 0x07u : n == 3 ? c & 0x0Fu : n == 2 ? c & 0x1Fu : c;
          for (std::size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3Fu);
          i += n - 1;
          if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
          }
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
      }
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, const JsonStyle& style, int level) {
  const auto newline = [&](int lvl) {
    out += '\n';
    out.append(static_cast<std::size_t>(*style.indent) * static_cast<std::size_t>(lvl), ' ');
  };
  const std::string item_separator = style.item_separator.value_or(style.indent ? "," : ", ");
  const std::string key_separator = style.key_separator.value_or(": ");
  switch (v.kind) {
    case Value::Kind::None: out += "null"; return;
    case Value::Kind::Bool: out += v.boolean ? "true" : "false"; return;
    case Value::Kind::Int: out += std::to_string(v.integer); return;
    case Value::Kind::Float:
      if (std::isnan(v.number))
        out += "NaN";
      else if (std::isinf(v.number)) out += v.number > 0 ? "Infinity" : "-Infinity";
      else out += float_repr(v.number);
      return;
    case Value::Kind::String: json_string(out, v.text, style.ensure_ascii); return;
    case Value::Kind::List: {
      const auto& items = v.items();
      if (items.empty()) { out += "[]"; return; }
      out += '[';
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_separator;
        if (style.indent) newline(level + 1);
        json_value(out, items[i], style, level + 1);
      }
      if (style.indent) newline(level);
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      auto entries = v.dict->entries;
      if (entries.empty()) { out += "{}"; return; }
      if (style.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      out += '{';
      for (std::size_t i = 0; i < entries.size(); ++i) {
        if (i) out += item_separator;
        if (style.indent) newline(level + 1);
        json_string(out, entries[i].first, style.ensure_ascii);
        out += key_separator;
        json_value(out, entries[i].second, style, level + 1);
      }
      if (style.indent) newline(level);
      out += '}';
      return;
    }
    default: value_error("tojson: Object of type ", type_name(v), " is not JSON serializable");
  }
}

}  // namespace

std::string to_str(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::String: return v.text;
    default: return to_repr(v);
  }
}

std::string to_repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return v.boolean ? "True" : "False";
    case Value::Kind::Int: return std::to_string(v.integer);
    case Value::Kind::Float: return float_repr(v.number);
    case Value::Kind::String: return string_repr(v.text);
    case Value::Kind::List: {
      const bool tuple = v.list->tuple;
      std::string out = tuple ? "(" : "[";
      const auto& items = v.items();
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += to_repr(items[i]);
      }
      if (tuple && items.size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Value::Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.dict->entries) {
        if (!first) out += ", ";
        first = false;
        out += string_repr(k) + ": " + to_repr(val);
      }
      return out + "}";
    }
    case Value::Kind::Namespace: return "<Namespace>";
    case Value::Kind::Callable: return "<function>";
  }
  return "";
}

std::string to_json(const Value& v, const JsonStyle& style) {
  std::string out;
  json_value(out, v, style, 0);
  return out;
}

std::string type_name(const Value& v) {
  switch (v.kind) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List: return v.list->tuple ? "tuple" : "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Namespace: return "Namespace";
    case Value::Kind::Callable: return "function";
  }
  return "?";
}

}  // namespace gtpo::data::chat
